// The bridge process (docs/bridge-events.md, "Sending and errors" and
// "Recovery"): a LiveReader thread owns the ZMQ SUB socket and fills a
// LiveBuffer; the calling thread connects the gRPC channel and runs the
// recovery engine (StreamRecovery) over the buffer, the replay and snapshot
// clients when configured. Transient failures are retried inside the engine
// without tearing the subscription down; a permanent failure ends the run.
// Shutdown is observed within about 100 ms everywhere: while connecting,
// during backoff, between live items and during an RPC, replay or snapshot.
//
// Thread safety: Run() is called from one thread; the StopRequest may be
// triggered from any thread.
#ifndef KVINDEXER_BRIDGE_BRIDGE_RUNNER_H_
#define KVINDEXER_BRIDGE_BRIDGE_RUNNER_H_

#include <chrono>

#include "absl/status/status.h"
#include "bridge/backoff.h"
#include "bridge/bridge_config.h"
#include "bridge/bridge_stats.h"
#include "bridge/stop_request.h"

namespace kvindexer::bridge {

// Process exit statuses of kv-indexer-bridge.
inline constexpr int kExitOk = 0;
inline constexpr int kExitPermanentError = 1;
inline constexpr int kExitConfigError = 2;

class BridgeRunner {
 public:
  // `shutdown` must outlive the runner.
  BridgeRunner(BridgeConfig config, StopRequest* shutdown);

  // Runs until shutdown (kExitOk) or a permanent apply error
  // (kExitPermanentError). Prints the stats line at exit.
  int Run();

  const BridgeStats& stats() const { return stats_; }

 private:
  void MaybeLogStats(std::chrono::steady_clock::time_point now);

  const BridgeConfig config_;
  StopRequest* shutdown_;
  BridgeStats stats_;
  std::chrono::steady_clock::time_point last_stats_;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_BRIDGE_RUNNER_H_
