#include "configure_heartbeat.h"

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"

namespace kvindexer::bench {
namespace {

using Clock = std::chrono::steady_clock;

absl::StatusOr<double> ServerCpu(const test_support::ServerProcess& server) {
  const double cpu = server.CpuSeconds();
  if (cpu < 0) return absl::InternalError("cannot read the server's CPU time");
  return cpu;
}

}  // namespace

absl::StatusOr<HeartbeatCost> MeasureConfigureHeartbeat(
    ::kv_indexer::v1::KVIndexer::Stub& stub,
    const test_support::ServerProcess& server,
    const ::kv_indexer::v1::ConfigureExpectedWorkersRequest& request,
    uint32_t senders, double window_s) {
  HeartbeatCost cost;
  cost.window_s = window_s;
  const auto window =
      std::chrono::microseconds(static_cast<int64_t>(window_s * 1'000'000));

  absl::StatusOr<double> before = ServerCpu(server);
  if (!before.ok()) return before.status();
  std::this_thread::sleep_for(window);  // the idle window: nothing to wait on
  absl::StatusOr<double> idle_end = ServerCpu(server);
  if (!idle_end.ok()) return idle_end.status();
  cost.idle_cpu_s = *idle_end - *before;

  const auto spacing = std::chrono::microseconds(
      1'000'000 / static_cast<int64_t>(std::max<uint32_t>(senders, 1)));
  const Clock::time_point start = Clock::now();
  ::kv_indexer::v1::ConfigureExpectedWorkersResponse resp;
  for (Clock::time_point next = start; next < start + window; next += spacing) {
    std::this_thread::sleep_until(next);  // pacing, not synchronisation
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    const grpc::Status s =
        stub.ConfigureExpectedWorkers(&context, request, &resp);
    if (!s.ok()) {
      return absl::InternalError(
          absl::StrCat("a heartbeat Configure failed: ", s.error_message()));
    }
    ++cost.configures;
  }
  std::this_thread::sleep_until(start + window);
  absl::StatusOr<double> busy_end = ServerCpu(server);
  if (!busy_end.ok()) return busy_end.status();
  cost.busy_cpu_s = *busy_end - *idle_end;
  cost.busy_core_share = cost.busy_cpu_s / window_s;
  cost.added_core_share = (cost.busy_cpu_s - cost.idle_cpu_s) / window_s;
  return cost;
}

}  // namespace kvindexer::bench
