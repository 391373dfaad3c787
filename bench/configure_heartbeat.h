// What a fleet of line-A bridges' heartbeats cost the server (BENCHMARKS.md,
// "Line-A routers and bridges"): every stream's bridge sends its unchanged
// Configure once a second, spread evenly over the second, and the server's
// CPU time over the window is compared with an idle window of the same
// length just before, and with a control window in which the same number of
// the cheapest read (a one-hash MatchExternalKv) arrive at the same pace: on
// a virtual machine most of a paced call's cost is waking the threads that
// serve it, whatever the call.
//
// Thread safety: call from one thread.
#ifndef KVINDEXER_BENCH_CONFIGURE_HEARTBEAT_H_
#define KVINDEXER_BENCH_CONFIGURE_HEARTBEAT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "kv_indexer.grpc.pb.h"
#include "tests/support/server_process.h"

namespace kvindexer::bench {

struct HeartbeatCost {
  double window_s = 0;
  uint64_t configures = 0;
  double idle_cpu_s = 0;     // the server's CPU seconds in the idle window
  double busy_cpu_s = 0;     // ... and in the heartbeat window
  double control_cpu_s = 0;  // ... and in the control window
  // Of one core: busy_cpu_s / window_s, and the same minus the idle share.
  double busy_core_share = 0;
  double added_core_share = 0;
  // (busy_cpu_s - control_cpu_s) / window_s: the Configures' own work.
  double over_control_core_share = 0;
};

// `senders` Configures of `request` per second for `window_s` seconds.
// Fails when a Configure fails or the server's CPU time cannot be read.
absl::StatusOr<HeartbeatCost> MeasureConfigureHeartbeat(
    ::kv_indexer::v1::KVIndexer::Stub& stub,
    const test_support::ServerProcess& server,
    const ::kv_indexer::v1::ConfigureExpectedWorkersRequest& request,
    uint32_t senders, double window_s);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_CONFIGURE_HEARTBEAT_H_
