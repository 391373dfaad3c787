// The JetStream driver of EventLog (fleet/event_log.h; docs/fleet.md, "The
// event log on JetStream"): one stream holds every worker's records, worker
// W's under the subject <prefix>.w.<W in lowercase hex>. Appends use the
// stream's message de-duplication (Nats-Msg-Id) and its per-subject
// expected-last-sequence check as the fence; positions are the stream's
// sequence numbers.
//
// Thread safety: thread-safe; one connection serves every call.
#ifndef KVINDEXER_FLEET_JETSTREAM_EVENT_LOG_H_
#define KVINDEXER_FLEET_JETSTREAM_EVENT_LOG_H_

#include <memory>

#include "absl/status/statusor.h"
#include "fleet/event_log.h"
#include "fleet/fleet_config.h"

namespace kvindexer::fleet {

// Connects to NATS and creates the stream when it does not exist yet (with
// `config.replicas` replicas and the de-duplication window), or checks that
// the existing one can serve as the log. UNAVAILABLE when no server answers
// within the timeout; FAILED_PRECONDITION when the stream exists with
// settings the log cannot work with (the message says which).
[[nodiscard]] absl::StatusOr<std::unique_ptr<EventLog>> OpenJetStreamEventLog(
    const EventLogConfig& config);

}  // namespace kvindexer::fleet

#endif  // KVINDEXER_FLEET_JETSTREAM_EVENT_LOG_H_
