#include "fleet/jetstream_fleet.h"

#include "fleet/jetstream_event_log.h"

namespace kvindexer::fleet {

// Until the JetStream snapshot store and lease land: the log alone, and a
// replica reads it from its start.
absl::StatusOr<FleetStores> OpenJetStreamFleet(const EventLogConfig& config) {
  absl::StatusOr<std::unique_ptr<EventLog>> log = OpenJetStreamEventLog(config);
  if (!log.ok()) return log.status();
  FleetStores stores;
  stores.log = *std::move(log);
  return stores;
}

}  // namespace kvindexer::fleet
