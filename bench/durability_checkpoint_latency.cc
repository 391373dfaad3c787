#include "durability_checkpoint_latency.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "durability_log_traffic.h"
#include "seconds_since.h"

namespace kvindexer::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Runs fixed-rate queries on a thread of their own until Finish().
class BackgroundQueries {
 public:
  BackgroundQueries(ChannelPool* pool,
                    const std::vector<v1::MatchExternalKvPrefixRequest>& q,
                    QueryLoad load) {
    load.stop = &stop_;
    thread_ = std::thread(
        [this, pool, &q, load] { result_ = RunQueries(pool, q, load); });
  }
  ~BackgroundQueries() {
    if (thread_.joinable()) Finish();
  }
  BackgroundQueries(const BackgroundQueries&) = delete;
  BackgroundQueries& operator=(const BackgroundQueries&) = delete;

  QueryResult Finish() {
    stop_.store(true);
    thread_.join();
    return *result_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::optional<QueryResult> result_;
  std::thread thread_;
};

}  // namespace

absl::StatusOr<CheckpointLatencyFigures> MeasureCheckpointLatency(
    DurabilityRig& rig, const std::string& data_dir,
    const std::vector<v1::MatchExternalKvPrefixRequest>& queries,
    const CheckpointLatencyOptions& options, Report* report) {
  CheckpointLatencyFigures figures;
  figures.qps = options.qps;
  const LogTraffic traffic;
  const std::string at = absl::StrFormat("@%.0fqps", options.qps);
  const auto query_load = [&](const std::string& label,
                              absl::Duration duration) {
    QueryLoad load;
    load.label = label + at;
    load.offered_qps = options.qps;
    load.concurrency = options.max_outstanding;
    load.duration = duration;
    load.rpc_deadline = options.rpc_deadline;
    load.progress_every = options.progress_every;
    return load;
  };

  for (uint32_t round = 0; round < options.rounds; ++round) {
    if (!WaitForDir(data_dir, NoCheckpointInProgress, options.max_checkpoint)) {
      return absl::DeadlineExceededError(
          "a checkpoint did not finish within the bound (the newest "
          "checkpoint never caught up with the newest log generation)");
    }
    std::fprintf(stderr, "== checkpoint latency round %u at %.0f qps: idle\n",
                 round + 1, options.qps);
    const DirUsage idle_before = MeasureDir(data_dir);
    const QueryResult idle = RunQueries(
        rig.pool(), queries, query_load("queries/idle", options.idle_duration));
    if (!NoCheckpointInProgress(MeasureDir(data_dir)) ||
        MeasureDir(data_dir).newest_checkpoint !=
            idle_before.newest_checkpoint) {
      std::fprintf(stderr, "warning: a checkpoint ran during the idle run\n");
    }
    WriteQuery(*report, "wal-always", "queries/idle" + at, idle);
    figures.idle_p99_us.push_back(idle.latency.p99_us);
    figures.failed_queries += idle.status.failed();

    // Log traffic until the log rotates: the checkpoint starts.
    std::fprintf(stderr,
                 "== checkpoint latency round %u: log traffic until the log "
                 "rotates\n",
                 round + 1);
    const DirUsage before = MeasureDir(data_dir);
    absl::StatusOr<double> trigger =
        traffic.RunUntilRotation(rig.side_pool(), data_dir, before,
                                 options.max_trigger, options.rpc_deadline * 5);
    if (!trigger.ok()) return trigger.status();
    figures.trigger_seconds.push_back(*trigger);

    // Build: until the checkpoint's file appears (or it is already done).
    const Clock::time_point build_start = Clock::now();
    BackgroundQueries build(
        rig.pool(), queries,
        query_load("queries/checkpoint-build", options.max_checkpoint));
    const auto done = [&](const DirUsage& d) {
      return d.newest_checkpoint != before.newest_checkpoint &&
             !d.writing_checkpoint;
    };
    const bool build_ended = WaitForDir(
        data_dir,
        [&](const DirUsage& d) { return d.writing_checkpoint || done(d); },
        options.max_checkpoint);
    const QueryResult build_result = build.Finish();
    const double build_seconds = SecondsSince(build_start);
    if (!build_ended) {
      return absl::DeadlineExceededError(
          "no checkpoint file appeared within the bound");
    }
    // Write: until the file is renamed into place.
    const Clock::time_point write_start = Clock::now();
    BackgroundQueries write(
        rig.pool(), queries,
        query_load("queries/checkpoint-write", options.max_checkpoint));
    const bool write_ended = WaitForDir(data_dir, done, options.max_checkpoint);
    const QueryResult write_result = write.Finish();
    const double write_seconds = SecondsSince(write_start);
    if (!write_ended) {
      return absl::DeadlineExceededError(
          "the checkpoint file was not renamed into place within the bound");
    }

    WriteQuery(*report, "wal-always", "queries/checkpoint-build" + at,
               build_result);
    WriteQuery(*report, "wal-always", "queries/checkpoint-write" + at,
               write_result);
    figures.failed_queries +=
        build_result.status.failed() + write_result.status.failed();
    figures.build_seconds.push_back(build_seconds);
    figures.write_seconds.push_back(write_seconds);
    figures.build_answers.push_back(
        static_cast<double>(build_result.latency.count));
    figures.write_answers.push_back(
        static_cast<double>(write_result.latency.count));
    if (build_result.latency.count > 0) {
      figures.build_p99_us.push_back(build_result.latency.p99_us);
    }
    if (write_result.latency.count > 0) {
      figures.write_p99_us.push_back(write_result.latency.p99_us);
    }
    std::fprintf(stderr,
                 "  log traffic %.2f s; checkpoint built in %.2f s (%llu "
                 "answers), written in %.2f s (%llu answers)\n",
                 figures.trigger_seconds.back(), build_seconds,
                 static_cast<unsigned long long>(build_result.latency.count),
                 write_seconds,
                 static_cast<unsigned long long>(write_result.latency.count));
  }
  return figures;
}

}  // namespace kvindexer::bench
