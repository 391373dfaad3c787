// Scenario (b) of kv-indexer-bridge-bench: how long a gated bridge takes to
// restore a worker's blocks into a server that restarted empty.
//
// The worker (FakeSglangPublisher, replay buffer deep enough for every
// batch) stores `blocks` legacy blocks in batches of `shape`, published
// paced through a gated bridge with a replay endpoint, until all are held.
// After `settle` with the worker idle (the bridge is then in its steady
// state, probing the server about once a second), the server is SIGKILLed and
// started again, empty, on the same port.
// The clock starts at the restarted server's "listening" log line and stops
// when a sample of the blocks (spread evenly, including the last) is held
// again; afterwards every block is checked in 16,384-hash calls, and after
// another `settle` the bridge is stopped. The bridge's log lines from the kill
// on are kept with their offsets from "listening", and with the publisher's
// replay timings they show the phases (detection, replay, fold + Replace).
#ifndef KVINDEXER_BENCH_BRIDGE_RESTORE_H_
#define KVINDEXER_BENCH_BRIDGE_RESTORE_H_

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bridge_payloads.h"
#include "bridge_rig.h"

namespace kvindexer::bench {

struct RestoreSetup {
  std::string server_binary;
  std::string backend;
  std::string server_log;
  std::string bridge_log;
  size_t window = 128;
  std::chrono::microseconds poll{1000};          // while populating
  std::chrono::microseconds restore_poll{5000};  // while restoring
  size_t sample = 256;                     // blocks polled while restoring
  std::chrono::milliseconds settle{3000};  // idle time before the kill
  std::chrono::milliseconds timeout{300'000};
};

struct RestoreLogLine {
  double offset_s = 0;  // from the restarted server's "listening" line
  std::string text;     // without its timestamp
};

struct RestoreResult {
  size_t blocks = 0;
  size_t batches = 0;
  double populate_s = 0;           // publishing all batches through the bridge
  double kill_to_listening_s = 0;  // SIGKILL -> restarted server listening
  double restore_s = 0;            // listening -> sample held again
  size_t verified_held = 0;        // blocks held at the end (all checked)
  double verify_s = 0;             // the full check
  // Serialised size of a ReplaceExternalKvSnapshotRequest carrying the
  // worker's holdings as one legacy HBM tier (what mode R case 1 installs),
  // computed here, not taken from the bridge.
  size_t replace_request_bytes = 0;
  // Phases, in seconds from "listening"; -1 when not seen. From the bridge's
  // log: its "server state lost" and "stream synchronised" lines (the
  // engine's wording). From the publisher: the first replay request after
  // the kill, received and fully handed to ZMQ, and its batches.
  double state_lost_s = -1;
  double replay_received_s = -1;
  double replay_replied_s = -1;
  size_t replay_batches = 0;
  double synchronised_s = -1;
  std::vector<RestoreLogLine> bridge_lines;  // after the kill, bounded
  std::string stats_line;
};

[[nodiscard]] absl::StatusOr<RestoreResult> RunRestore(
    const RestoreSetup& setup, const BridgeVariant& variant,
    const BatchPlan& plan, const std::vector<std::string>& payloads);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_BRIDGE_RESTORE_H_
