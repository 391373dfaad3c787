#include "fleet/jetstream_event_log.h"

namespace kvindexer::fleet {

// Placeholder until the driver lands: fleet mode refuses to start.
absl::StatusOr<std::unique_ptr<EventLog>> OpenJetStreamEventLog(
    const EventLogConfig& config) {
  (void)config;
  return absl::UnimplementedError("the JetStream event log is not built yet");
}

}  // namespace kvindexer::fleet
