#include "durability_recovery.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "builder_signals.h"
#include "common/wire_vocabulary.h"
#include "durability_log_traffic.h"
#include "grpcpp/grpcpp.h"

namespace kvindexer::bench {
namespace {

// What a churn that ends at the replay cap watches and kills.
struct CapKill {
  std::string data_dir;
  uint64_t threshold = 0;  // tail bytes that count as the cap
  test_support::ServerProcess* server = nullptr;
  size_t builders_stopped = 0;  // set by Churn
};

// Runs churn.streams senders of log traffic for churn.duration; answers
// the hashes applied per second. With `cap`, the senders go on until the
// log a restart would replay reaches cap->threshold or churn.cap_wait
// passes, and the server is SIGKILLed then, in the middle of the traffic.
absl::StatusOr<double> Churn(ChannelPool* pool, const ChurnOptions& churn,
                             CapKill* cap) {
  const LogTraffic traffic;
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + absl::ToChronoMilliseconds(churn.duration);
  std::atomic<uint64_t> applies{0};
  std::atomic<bool> killed{false};
  std::atomic<size_t> ended{0};
  const size_t streams = std::max<uint32_t>(churn.streams, 1);
  std::vector<absl::Status> results(streams);
  // Whether each sender stopped before the kill: its error is the run's.
  std::vector<char> ended_first(streams, 0);
  std::vector<std::thread> senders;
  for (size_t i = 0; i < streams; ++i) {
    senders.emplace_back([&, i] {
      results[i] = traffic.Run(
          pool,
          [&] {
            // Asked before every apply; an apply follows each false (and
            // a REVOKE closing a REPORT follows the last true, uncounted).
            if (killed.load()) return true;
            if (cap == nullptr && std::chrono::steady_clock::now() >= end) {
              return true;
            }
            applies.fetch_add(1, std::memory_order_relaxed);
            return false;
          },
          nullptr, churn.rpc_deadline);
      ended_first[i] = killed.load() ? 0 : 1;
      ended.fetch_add(1);
    });
  }
  std::chrono::steady_clock::time_point stopped;
  if (cap != nullptr) {
    const auto give_up = end + absl::ToChronoMilliseconds(churn.cap_wait);
    BuilderStall stall(cap->server->pid());
    // Builders are looked for every 10 ms (a build of ten million
    // placements runs for a second or more), the log every 2 ms: the
    // watching must not take the CPU the measured server needs.
    auto next_look = end;
    const auto waiting = [&] {
      if (ended.load() == streams) return false;  // every sender failed
      const auto now = std::chrono::steady_clock::now();
      if (now < end) return true;
      if (churn.stall_builds && now >= next_look) {
        stall.StopNew();
        next_look = now + std::chrono::milliseconds(10);
      }
      return now < give_up &&
             MeasureDir(cap->data_dir).tail_bytes < cap->threshold;
    };
    while (waiting()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    stopped = std::chrono::steady_clock::now();
    killed.store(true);
    cap->server->Kill();
    cap->builders_stopped = stall.stopped();
    // `stall` SIGKILLs the builders it stopped as it goes.
  }
  for (std::thread& t : senders) t.join();
  if (cap == nullptr) stopped = std::chrono::steady_clock::now();
  for (size_t i = 0; i < streams; ++i) {
    // Applies cut off by the kill fail, as they should.
    if (ended_first[i] && !results[i].ok()) return results[i];
  }
  const double seconds = std::chrono::duration<double>(stopped - start).count();
  return static_cast<double>(applies.load() * kMaxHashesPerRequest) / seconds;
}

}  // namespace

std::optional<RestartKind> ParseRestartKind(const std::string& name) {
  for (RestartKind kind :
       {RestartKind::kSigterm, RestartKind::kSigkill,
        RestartKind::kSigkillFullLog, RestartKind::kSigkillAfterChurn,
        RestartKind::kSigkillAtCap}) {
    if (name == RestartKindName(kind)) return kind;
  }
  return std::nullopt;
}

const char* RestartKindName(RestartKind kind) {
  switch (kind) {
    case RestartKind::kSigterm:
      return "sigterm";
    case RestartKind::kSigkill:
      return "sigkill";
    case RestartKind::kSigkillFullLog:
      return "sigkill-full-log";
    case RestartKind::kSigkillAfterChurn:
      return "sigkill-after-churn";
    case RestartKind::kSigkillAtCap:
      return "sigkill-at-cap";
  }
  return "?";
}

absl::StatusOr<RestartFigures> MeasureRestart(
    std::unique_ptr<DurabilityRig>* rig, const RigOptions& rig_options,
    const std::string& data_dir, RestartKind kind, const LogSizes& sizes,
    const HeadlineCheck& headline, const ChurnOptions& churn) {
  const uint64_t checkpoint_bytes = sizes.checkpoint_bytes;
  // Room for the records the traffic may still add (a REVOKE always
  // follows a REPORT); a record of 16,384 hashes is about 131 KB.
  constexpr uint64_t kRecordRoom = 3 * 140'000;
  const DurabilityMode mode = (*rig)->mode();
  uint64_t cap_threshold = 0;  // kSigkillAtCap
  RestartFigures figures;
  figures.kind = kind;
  // A checkpoint in progress would be part of what is measured.
  if (!WaitForDir(data_dir, NoCheckpointInProgress, absl::Seconds(300))) {
    return absl::DeadlineExceededError("a checkpoint did not finish");
  }
  if (kind == RestartKind::kSigkillFullLog) {
    // 90% of the checkpoint size, and room for the records the traffic may
    // still add: the log rotates once it holds more than the checkpoint
    // size.
    const uint64_t target = std::min(
        checkpoint_bytes / 10 * 9,
        checkpoint_bytes > kRecordRoom ? checkpoint_bytes - kRecordRoom : 0);
    const uint64_t generation = MeasureDir(data_dir).newest_wal;
    absl::Status filled = LogTraffic().Run(
        (*rig)->side_pool(),
        [&] {
          const DirUsage d = MeasureDir(data_dir);
          return d.newest_wal != generation || d.newest_wal_bytes >= target;
        },
        nullptr, absl::Seconds(10));
    if (!filled.ok()) return filled;
    if (MeasureDir(data_dir).newest_wal != generation) {
      return absl::InternalError(
          "the log rotated while it was being filled; is the checkpoint "
          "size given right?");
    }
  }
  if (kind == RestartKind::kSigkillAfterChurn) {
    absl::StatusOr<double> rate = Churn((*rig)->side_pool(), churn, nullptr);
    if (!rate.ok()) return rate.status();
    figures.churn_hashes_per_s = *rate;
  }
  if (kind == RestartKind::kSigkillAtCap) {
    if (sizes.max_replay_bytes <= kRecordRoom) {
      return absl::InvalidArgumentError(
          "sigkill-at-cap needs a replay cap (KV_INDEXER_MAX_REPLAY_BYTES) "
          "above 420,000 bytes");
    }
    CapKill cap;
    cap.data_dir = data_dir;
    cap.threshold = sizes.max_replay_bytes - kRecordRoom;
    cap.server = &(*rig)->process();
    absl::StatusOr<double> rate = Churn((*rig)->side_pool(), churn, &cap);
    if (!rate.ok()) return rate.status();
    figures.churn_hashes_per_s = *rate;
    if (churn.stall_builds && cap.builders_stopped == 0) {
      return absl::FailedPreconditionError(
          "--stall_builds found no checkpoint builder process to stop: is "
          "KV_INDEXER_CHECKPOINT_BUILDER=process?");
    }
    cap_threshold = cap.threshold;
  }
  if (kind == RestartKind::kSigterm) {
    if (absl::Status s = (*rig)->Stop(); !s.ok()) return s;
  } else if (kind != RestartKind::kSigkillAtCap) {
    (*rig)->process().Kill();
  }
  rig->reset();
  figures.dir = MeasureDir(data_dir);
  // Decided after the kill: a build that ended just before it shrank the
  // tail the restart replays.
  figures.reached_cap = kind == RestartKind::kSigkillAtCap &&
                        figures.dir.tail_bytes >= cap_threshold;

  absl::StatusOr<std::unique_ptr<DurabilityRig>> restarted =
      DurabilityRig::Start(rig_options, mode, data_dir);
  if (!restarted.ok()) return restarted.status();
  *rig = *std::move(restarted);
  figures.seconds_to_listen = (*rig)->seconds_to_listen();
  if (!(*rig)->recovered().has_value()) {
    return absl::InternalError(
        absl::StrCat("the restarted server printed no recovery line:\n",
                     (*rig)->process().Output()));
  }
  figures.recovered = *(*rig)->recovered();

  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::MatchExternalKvPrefixResponse resp;
  const grpc::Status status = (*rig)->pool()->Next()->MatchExternalKvPrefix(
      &ctx, headline.query, &resp);
  if (status.ok()) {
    uint32_t full = 0;
    for (const auto& match : resp.matches()) {
      if (match.matched_prefix_blocks() == headline.prefix_blocks) ++full;
    }
    figures.headline_ok = full == headline.workers &&
                          resp.best_prefix_blocks() == headline.prefix_blocks;
  }
  return figures;
}

}  // namespace kvindexer::bench
