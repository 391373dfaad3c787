#include "configure_heartbeat.h"

#include <algorithm>
#include <chrono>
#include <functional>
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

  // `senders` calls per second of `call` for the window; the server's CPU
  // seconds they took.
  const auto paced = [&](const std::function<grpc::Status()>& call,
                         double* cpu_s) -> absl::Status {
    absl::StatusOr<double> start_cpu = ServerCpu(server);
    if (!start_cpu.ok()) return start_cpu.status();
    const auto spacing = std::chrono::microseconds(
        1'000'000 / static_cast<int64_t>(std::max<uint32_t>(senders, 1)));
    const Clock::time_point start = Clock::now();
    for (Clock::time_point next = start; next < start + window;
         next += spacing) {
      std::this_thread::sleep_until(next);  // pacing, not synchronisation
      const grpc::Status s = call();
      if (!s.ok()) {
        return absl::InternalError(
            absl::StrCat("a paced call failed: ", s.error_message()));
      }
    }
    std::this_thread::sleep_until(start + window);
    absl::StatusOr<double> end_cpu = ServerCpu(server);
    if (!end_cpu.ok()) return end_cpu.status();
    *cpu_s = *end_cpu - *start_cpu;
    return absl::OkStatus();
  };
  ::kv_indexer::v1::ConfigureExpectedWorkersResponse resp;
  const auto configure = [&] {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    ++cost.configures;
    return stub.ConfigureExpectedWorkers(&context, request, &resp);
  };
  ::kv_indexer::v1::MatchExternalKvRequest match;
  match.add_hashes(1);
  ::kv_indexer::v1::MatchExternalKvResponse matched;
  const auto control = [&] {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    return stub.MatchExternalKv(&context, match, &matched);
  };
  if (absl::Status s = paced(configure, &cost.busy_cpu_s); !s.ok()) return s;
  if (absl::Status s = paced(control, &cost.control_cpu_s); !s.ok()) {
    return s;
  }
  cost.busy_core_share = cost.busy_cpu_s / window_s;
  cost.added_core_share = (cost.busy_cpu_s - cost.idle_cpu_s) / window_s;
  cost.over_control_core_share =
      (cost.busy_cpu_s - cost.control_cpu_s) / window_s;
  return cost;
}

}  // namespace kvindexer::bench
