// Everything a fleet replica keeps in NATS JetStream, opened over one
// connection (docs/fleet.md): the event log (fleet/jetstream_event_log.h),
// the snapshot store (the stream <stream>_SNAPSHOTS) and the snapshot
// lease (the key "writer" of the key-value bucket <stream>_LEASE).
#ifndef KVINDEXER_FLEET_JETSTREAM_FLEET_H_
#define KVINDEXER_FLEET_JETSTREAM_FLEET_H_

#include <chrono>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "fleet/event_log.h"
#include "fleet/fleet_config.h"
#include "fleet/lease_register.h"
#include "fleet/snapshot_store.h"

namespace kvindexer::fleet {

struct FleetStores {
  std::unique_ptr<EventLog> log;
  std::unique_ptr<SnapshotStore> snapshots;
  std::unique_ptr<LeaseRegister> lease;
};

// How OpenJetStreamFleet waits out a cluster that cannot answer yet (a node
// just died and its streams are electing leaders; a server restarting):
// each step that answers UNAVAILABLE is tried again, `attempts` times in
// all, after a wait that doubles from `first_wait`.
struct FleetOpenRetry {
  int attempts = 6;
  std::chrono::milliseconds first_wait{500};
  // Called for each wait; null: the calling thread sleeps. For tests.
  std::function<void(std::chrono::milliseconds)> wait;
};

// Connects, and creates what does not exist yet (with config.replicas
// replicas), or checks what does. Errors as OpenJetStreamEventLog; an
// UNAVAILABLE one only once `retry` is spent.
[[nodiscard]] absl::StatusOr<FleetStores> OpenJetStreamFleet(
    const EventLogConfig& config, const FleetOpenRetry& retry = {});

}  // namespace kvindexer::fleet

#endif  // KVINDEXER_FLEET_JETSTREAM_FLEET_H_
