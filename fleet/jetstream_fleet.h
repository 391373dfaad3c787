// Everything a fleet replica keeps in NATS JetStream, opened over one
// connection (docs/fleet.md): the event log (fleet/jetstream_event_log.h),
// the snapshot store (the stream <stream>_SNAPSHOTS) and the snapshot
// lease (the key "writer" of the key-value bucket <stream>_LEASE).
#ifndef KVINDEXER_FLEET_JETSTREAM_FLEET_H_
#define KVINDEXER_FLEET_JETSTREAM_FLEET_H_

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

// Connects, and creates what does not exist yet (with config.replicas
// replicas), or checks what does. Errors as OpenJetStreamEventLog.
[[nodiscard]] absl::StatusOr<FleetStores> OpenJetStreamFleet(
    const EventLogConfig& config);

}  // namespace kvindexer::fleet

#endif  // KVINDEXER_FLEET_JETSTREAM_FLEET_H_
