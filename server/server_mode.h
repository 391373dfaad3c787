// ServerMode: what one way of running kv-indexer-server adds to what every
// server shares (server/server_wiring.h): the state it keeps beside the
// Indexer and the threads that run beside the gRPC server. There are two:
// standalone, alone or over a data directory (server/standalone_start.h),
// and a replica of the fleet event log (server/replica_start.h). A mode's
// start function loads its state before the listen address is bound, then
// hands the mode to ServerWiring::Serve, which calls, in this order:
//   Attach          once the gRPC server is built, before it reports
//                   SERVING and before "listening" is logged;
//   Start           after "listening" is logged;
//   MaySweep        before each liveness sweep, on the sweeper's thread;
//   NotReadyReason  for /readyz while the server serves, on the metrics
//                   endpoint's threads;
//   CaughtUpWithLog for each status report while the server serves, on
//                   the status reporter's threads;
//   Stop            at shutdown, once the gRPC server and the sweeper have
//                   stopped, before `health` goes and before the metrics
//                   endpoint stops.
// Attach, Start and Stop run on the main thread.
//
// OWNERSHIP: the start function owns its mode and the state behind it, and
// destroys them after Serve returns, so after the metrics endpoint has
// stopped.
#ifndef KVINDEXER_SERVER_SERVER_MODE_H_
#define KVINDEXER_SERVER_SERVER_MODE_H_

#include <optional>
#include <string>

#include "common/clock.h"
#include "server/serving_health.h"

namespace kvindexer {

class ServerMode {
 public:
  virtual ~ServerMode() = default;

  // Connects what the mode runs to `health`. REQUIRES: `health` outlives
  // Stop.
  virtual void Attach(ServingHealth& health) = 0;
  // Starts what the mode runs beside the gRPC server.
  virtual void Start() {}
  // Whether the liveness sweep at `now` (the Indexer's clock) may run.
  virtual bool MaySweep(MonotonicClock::TimePoint /*now*/) { return true; }
  // Why the mode keeps the server from being ready; nullopt: it does not.
  // Thread-safe.
  virtual std::optional<std::string> NotReadyReason() const = 0;
  // A replica of the fleet event log: caught up with it, not reloading a
  // snapshot and no more than KV_INDEXER_FLEET_MAX_LAG_RECORDS behind
  // (replica::LogFollower::caught_up). Any other mode: true. Thread-safe.
  virtual bool CaughtUpWithLog() const { return true; }
  // Shutdown has begun: calls still running should finish rather than wait
  // (a write held at the replay cap goes on). Thread-safe.
  virtual void Draining() {}
  // Stops what Start started and drops every callback into `health`.
  virtual void Stop() = 0;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_SERVER_MODE_H_
