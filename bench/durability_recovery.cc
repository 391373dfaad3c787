#include "durability_recovery.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/wire_vocabulary.h"
#include "durability_log_traffic.h"
#include "grpcpp/grpcpp.h"

namespace kvindexer::bench {
namespace {

// A checkpoint in progress would be part of what is measured; wait for it.
bool WaitNoCheckpointInProgress(const std::string& dir) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (std::chrono::steady_clock::now() < deadline) {
    const DirUsage d = MeasureDir(dir);
    if (d.newest_checkpoint == d.newest_wal && !d.writing_checkpoint) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

// Runs churn.streams senders of log traffic for churn.duration; answers
// the hashes applied per second.
absl::StatusOr<double> Churn(ChannelPool* pool, const ChurnOptions& churn) {
  const LogTraffic traffic;
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + absl::ToChronoMilliseconds(churn.duration);
  std::atomic<uint64_t> applies{0};
  std::vector<absl::Status> results(std::max<uint32_t>(churn.streams, 1));
  std::vector<std::thread> senders;
  for (absl::Status& result : results) {
    senders.emplace_back([&] {
      result = traffic.Run(
          pool,
          [&] {
            applies.fetch_add(1, std::memory_order_relaxed);
            return std::chrono::steady_clock::now() >= end;
          },
          nullptr, churn.rpc_deadline);
    });
  }
  for (std::thread& t : senders) t.join();
  for (const absl::Status& result : results) {
    if (!result.ok()) return result;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  // `done` is asked once before the first apply of each sender.
  const uint64_t sent = applies.load() - results.size();
  return static_cast<double>(sent * kMaxHashesPerRequest) / seconds;
}

}  // namespace

std::optional<RestartKind> ParseRestartKind(const std::string& name) {
  for (RestartKind kind :
       {RestartKind::kSigterm, RestartKind::kSigkill,
        RestartKind::kSigkillFullLog, RestartKind::kSigkillAfterChurn}) {
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
  }
  return "?";
}

absl::StatusOr<RestartFigures> MeasureRestart(
    std::unique_ptr<DurabilityRig>* rig, const RigOptions& rig_options,
    const std::string& data_dir, RestartKind kind, uint64_t checkpoint_bytes,
    const HeadlineCheck& headline, const ChurnOptions& churn) {
  RestartFigures figures;
  figures.kind = kind;
  if (!WaitNoCheckpointInProgress(data_dir)) {
    return absl::DeadlineExceededError("a checkpoint did not finish");
  }
  if (kind == RestartKind::kSigkillFullLog) {
    // 90% of the checkpoint size, and room for the two records the traffic
    // may still add (a REVOKE always follows a REPORT): the log rotates
    // once it holds more than the checkpoint size.
    constexpr uint64_t kRecordRoom = 3 * 140'000;
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
    absl::StatusOr<double> rate = Churn((*rig)->side_pool(), churn);
    if (!rate.ok()) return rate.status();
    figures.churn_hashes_per_s = *rate;
  }
  if (kind == RestartKind::kSigterm) {
    if (absl::Status s = (*rig)->Stop(); !s.ok()) return s;
  } else {
    (*rig)->process().Kill();
  }
  rig->reset();
  figures.dir = MeasureDir(data_dir);

  absl::StatusOr<std::unique_ptr<DurabilityRig>> restarted =
      DurabilityRig::Start(rig_options, DurabilityMode::kAlways, data_dir);
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
