#include "fleet/jetstream_fleet.h"

#include <utility>

#include "fleet/jetstream_event_log.h"
#include "fleet/jetstream_lease_register.h"
#include "fleet/jetstream_snapshot_store.h"
#include "fleet/nats_connection.h"

namespace kvindexer::fleet {

absl::StatusOr<FleetStores> OpenJetStreamFleet(const EventLogConfig& config) {
  absl::StatusOr<std::shared_ptr<NatsClient>> client =
      NatsClient::Connect(config.nats);
  if (!client.ok()) return client.status();
  FleetStores stores;
  absl::StatusOr<std::unique_ptr<EventLog>> log =
      OpenJetStreamEventLogOn(*client, config);
  if (!log.ok()) return log.status();
  stores.log = *std::move(log);
  absl::StatusOr<std::unique_ptr<SnapshotStore>> snapshots =
      OpenJetStreamSnapshotStore(*client, config);
  if (!snapshots.ok()) return snapshots.status();
  stores.snapshots = *std::move(snapshots);
  absl::StatusOr<std::unique_ptr<LeaseRegister>> lease =
      OpenJetStreamLeaseRegister(*client, config);
  if (!lease.ok()) return lease.status();
  stores.lease = *std::move(lease);
  return stores;
}

}  // namespace kvindexer::fleet
