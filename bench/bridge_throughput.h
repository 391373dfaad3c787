// Scenario (a) of kv-indexer-bridge-bench: end-to-end throughput of one
// bridge. A fresh server and bridge per run; one warm-up batch (not timed)
// brings the bridge through its start-up (and, in recovery mode, its initial
// synchronisation); then the plan's batches are published paced
// (PublishPaced) and the clock runs from the first Publish until the last
// hash is visible through MatchExternalKv. Afterwards every hash of the plan
// is checked (a dropped batch fails the run) and the bridge is stopped with
// SIGTERM, which makes it print its final stats line.
#ifndef KVINDEXER_BENCH_BRIDGE_THROUGHPUT_H_
#define KVINDEXER_BENCH_BRIDGE_THROUGHPUT_H_

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bridge_payloads.h"
#include "bridge_rig.h"

namespace kvindexer::bench {

struct ThroughputSetup {
  std::string server_binary;
  std::string backend;     // KV_INDEXER_BACKEND; empty: default
  std::string server_log;  // appended to; empty: temporary
  std::string bridge_log;  // appended to; empty: temporary
  size_t window = 128;     // batches per pacing window
  std::chrono::microseconds poll{1000};
  size_t buffer_steps = 1024;  // the publisher's replay buffer
  std::chrono::milliseconds timeout{300'000};
};

struct ThroughputResult {
  size_t batches = 0;
  size_t hashes = 0;
  double seconds = 0;  // first publish -> last hash visible
  double batches_per_s = 0;
  double hashes_per_s = 0;
  double bridge_cpu_s = 0;   // the bridge's CPU time during the timed part
  double server_cpu_s = 0;   // the server's, same interval
  size_t verified_held = 0;  // hashes of the plan held afterwards
  std::string stats_line;    // the bridge's "bridge stopped: ..." line
};

[[nodiscard]] absl::StatusOr<ThroughputResult> RunThroughput(
    const ThroughputSetup& setup, const BridgeVariant& variant,
    const BatchPlan& plan, const std::vector<std::string>& payloads);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_BRIDGE_THROUGHPUT_H_
