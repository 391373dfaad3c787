#include "durability_checkpoint_latency.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/wire_vocabulary.h"
#include "grpcpp/grpcpp.h"

namespace kvindexer::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kTriggerWorker[] = "checkpoint-trigger";
constexpr char kTriggerAddress[] = "127.0.0.1:1";
constexpr auto kPoll = std::chrono::milliseconds(1);

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One REPORT and one REVOKE of the same hashes: applied in turn they leave
// the index as it was, but each is a full-size log record.
struct TriggerBatches {
  v1::ApplyExternalKvBatchRequest report;
  v1::ApplyExternalKvBatchRequest revoke;
};

TriggerBatches MakeTriggerBatches() {
  TriggerBatches t;
  std::mt19937_64 rng(0x636b7074);  // fixed: the same hashes every run
  for (auto* batch : {&t.report, &t.revoke}) {
    batch->set_worker_id(kTriggerWorker);
    batch->set_worker_address(kTriggerAddress);
  }
  v1::ExternalKvAction* report = t.report.add_actions();
  report->set_type(v1::ACTION_REPORT);
  report->set_tier(v1::TIER_DRAM);
  for (size_t i = 0; i < kMaxHashesPerRequest; ++i) {
    report->add_hashes(static_cast<int64_t>(rng()));
  }
  v1::ExternalKvAction* revoke = t.revoke.add_actions();
  *revoke = *report;
  revoke->set_type(v1::ACTION_REVOKE);
  return t;
}

// Sends REPORT, REVOKE, REPORT, ... until `stop`, always ending on a
// REVOKE. Returns the first failure, if any.
absl::Status RunTrigger(ChannelPool* pool, const TriggerBatches& batches,
                        const std::atomic<bool>& stop,
                        absl::Duration deadline) {
  bool reported = false;
  while (!stop.load() || reported) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     absl::ToChronoMilliseconds(deadline));
    v1::ApplyExternalKvBatchResponse resp;
    const grpc::Status status = pool->Next()->ApplyExternalKvBatch(
        &ctx, reported ? batches.revoke : batches.report, &resp);
    if (!status.ok()) {
      return absl::UnavailableError(
          absl::StrCat("checkpoint trigger apply: ", status.error_message()));
    }
    reported = !reported;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CheckpointLatencyFigures> MeasureCheckpointLatency(
    DurabilityRig& rig, const std::string& data_dir,
    const std::vector<v1::MatchExternalKvPrefixRequest>& queries,
    const CheckpointLatencyOptions& options, Report* report) {
  CheckpointLatencyFigures figures;
  const TriggerBatches batches = MakeTriggerBatches();
  const auto query_load = [&](const std::string& label, absl::Duration duration,
                              const std::atomic<bool>* stop) {
    QueryLoad load;
    load.label = label;
    load.offered_qps = options.qps;
    load.concurrency = options.max_outstanding;
    load.duration = duration;
    load.rpc_deadline = options.rpc_deadline;
    load.progress_every = options.progress_every;
    load.stop = stop;
    return load;
  };
  // No checkpoint in progress: the newest checkpoint is the one of the
  // current log generation (checkpoint-<g> holds the state at the start of
  // wal-<g>) and no file is being written.
  const auto wait_idle_dir = [&](absl::Duration bound) {
    const Clock::time_point t0 = Clock::now();
    for (;;) {
      const DirUsage now = MeasureDir(data_dir);
      if (now.newest_checkpoint == now.newest_wal && !now.writing_checkpoint) {
        return true;
      }
      if (Since(t0) > absl::ToDoubleSeconds(bound)) return false;
      std::this_thread::sleep_for(kPoll);
    }
  };

  for (uint32_t round = 0; round < options.rounds; ++round) {
    if (!wait_idle_dir(options.max_checkpoint)) {
      return absl::DeadlineExceededError(
          "a checkpoint did not finish within the bound (the newest "
          "checkpoint never caught up with the newest log generation)");
    }
    // Idle.
    std::fprintf(stderr, "== checkpoint latency round %u: idle at %.0f qps\n",
                 round + 1, options.qps);
    const DirUsage idle_before = MeasureDir(data_dir);
    const QueryResult idle =
        RunQueries(rig.pool(), queries,
                   query_load("queries/idle", options.idle_duration, nullptr));
    const DirUsage idle_after = MeasureDir(data_dir);
    if (idle_after.newest_checkpoint != idle_before.newest_checkpoint ||
        idle_after.writing_checkpoint) {
      std::fprintf(stderr, "warning: a checkpoint ran during the idle run\n");
    }
    WriteQuery(*report, "wal-always", "queries/idle", idle);
    figures.idle_p99_us.push_back(idle.latency.p99_us);
    figures.failed_queries += idle.status.failed();

    // Log traffic until a checkpoint starts: the log rotates.
    std::fprintf(stderr,
                 "== checkpoint latency round %u: log traffic until a "
                 "checkpoint starts\n",
                 round + 1);
    const DirUsage before = MeasureDir(data_dir);
    std::atomic<bool> stop_trigger{false};
    absl::Status trigger_status;
    const Clock::time_point trigger_start = Clock::now();
    std::thread trigger([&] {
      trigger_status = RunTrigger(rig.side_pool(), batches, stop_trigger,
                                  options.rpc_deadline * 5);
    });
    bool rotated = false;
    while (!rotated &&
           Since(trigger_start) < absl::ToDoubleSeconds(options.max_trigger)) {
      const DirUsage now = MeasureDir(data_dir);
      rotated = now.newest_wal != before.newest_wal ||
                now.newest_checkpoint != before.newest_checkpoint;
      if (!rotated) std::this_thread::sleep_for(kPoll);
    }
    const Clock::time_point seen = Clock::now();
    stop_trigger.store(true);
    trigger.join();
    if (!trigger_status.ok()) return trigger_status;
    if (!rotated) {
      return absl::DeadlineExceededError(
          "the log did not rotate within the bound; is "
          "KV_INDEXER_CHECKPOINT_BYTES reachable?");
    }
    figures.trigger_seconds.push_back(
        std::chrono::duration<double>(seen - trigger_start).count());

    // Queries while the checkpoint is written.
    std::atomic<bool> stop_queries{false};
    std::optional<QueryResult> during;
    std::thread queries_thread([&] {
      during = RunQueries(rig.pool(), queries,
                          query_load("queries/during-checkpoint",
                                     options.max_checkpoint, &stop_queries));
    });
    std::optional<Clock::time_point> write_start, write_end;
    for (;;) {
      const DirUsage now = MeasureDir(data_dir);
      if (now.writing_checkpoint) {
        if (!write_start) write_start = Clock::now();
        write_end = Clock::now();
      }
      if (now.newest_checkpoint != before.newest_checkpoint &&
          !now.writing_checkpoint) {
        break;
      }
      if (Since(seen) > absl::ToDoubleSeconds(options.max_checkpoint)) {
        stop_queries.store(true);
        queries_thread.join();
        return absl::DeadlineExceededError(
            "the checkpoint did not appear within the bound");
      }
      std::this_thread::sleep_for(kPoll);
    }
    const double write_seconds =
        write_start
            ? std::chrono::duration<double>(*write_end - *write_start).count()
            : 0.0;
    const double checkpoint_seconds = Since(seen);
    stop_queries.store(true);
    queries_thread.join();
    figures.checkpoint_seconds.push_back(checkpoint_seconds);
    figures.write_seconds.push_back(write_seconds);
    WriteQuery(*report, "wal-always", "queries/during-checkpoint", *during);
    figures.failed_queries += during->status.failed();
    figures.during_samples.push_back(
        static_cast<double>(during->latency.count));
    if (during->latency.count > 0) {
      figures.during_p99_us.push_back(during->latency.p99_us);
    }
    std::fprintf(stderr,
                 "  checkpoint took %.3f s (its file written for about "
                 "%.3f s) after %.3f s of log traffic; %llu answers during "
                 "it\n",
                 checkpoint_seconds, write_seconds,
                 figures.trigger_seconds.back(),
                 static_cast<unsigned long long>(during->latency.count));
  }
  return figures;
}

}  // namespace kvindexer::bench
