#include "durability_log_traffic.h"

#include <chrono>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/wire_vocabulary.h"
#include "grpcpp/grpcpp.h"

namespace kvindexer::bench {

LogTraffic::LogTraffic() {
  std::mt19937_64 rng(0x636b7074);  // fixed: the same hashes every run
  for (auto* batch : {&report_, &revoke_}) {
    batch->set_worker_id("log-traffic");
    batch->set_worker_address("127.0.0.1:1");
  }
  v1::ExternalKvAction* report = report_.add_actions();
  report->set_type(v1::ACTION_REPORT);
  report->set_tier(v1::TIER_DRAM);
  for (size_t i = 0; i < kMaxHashesPerRequest; ++i) {
    report->add_hashes(static_cast<int64_t>(rng()));
  }
  v1::ExternalKvAction* revoke = revoke_.add_actions();
  *revoke = *report;
  revoke->set_type(v1::ACTION_REVOKE);
}

absl::Status LogTraffic::Run(ChannelPool* pool,
                             const std::function<bool()>& done,
                             const std::atomic<bool>* stop,
                             absl::Duration rpc_deadline) const {
  bool reported = false;
  for (;;) {
    const bool finish =
        (stop != nullptr && stop->load()) || (done != nullptr && done());
    if (finish && !reported) return absl::OkStatus();
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     absl::ToChronoMilliseconds(rpc_deadline));
    v1::ApplyExternalKvBatchResponse resp;
    const grpc::Status status = pool->Next()->ApplyExternalKvBatch(
        &ctx, reported ? revoke_ : report_, &resp);
    if (!status.ok()) {
      return absl::UnavailableError(
          absl::StrCat("log traffic apply: ", status.error_message()));
    }
    reported = !reported;
  }
}

absl::StatusOr<double> LogTraffic::RunUntilRotation(
    ChannelPool* pool, const std::string& data_dir, const DirUsage& before,
    absl::Duration bound, absl::Duration rpc_deadline) const {
  const auto start = std::chrono::steady_clock::now();
  const auto seconds = [&start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  bool timed_out = false;
  absl::Status status = Run(
      pool,
      [&] {
        timed_out = seconds() > absl::ToDoubleSeconds(bound);
        const DirUsage d = MeasureDir(data_dir);
        return timed_out || d.newest_wal != before.newest_wal ||
               d.newest_checkpoint != before.newest_checkpoint;
      },
      nullptr, rpc_deadline);
  if (!status.ok()) return status;
  if (timed_out) {
    return absl::DeadlineExceededError(
        "the log did not rotate within the bound; is "
        "KV_INDEXER_CHECKPOINT_BYTES reachable?");
  }
  return seconds();
}

}  // namespace kvindexer::bench
