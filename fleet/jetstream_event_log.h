// The JetStream driver of EventLog (fleet/event_log.h; docs/fleet.md, "The
// event log on JetStream"): one stream holds every worker's records, worker
// W's under the subject <prefix>.w.<W in lowercase hex>. Appends use the
// stream's message de-duplication (Nats-Msg-Id) and its per-subject
// expected-last-sequence check as the fence; positions are the stream's
// sequence numbers.
//
// Reads go through one ephemeral pull consumer, kept while each read
// continues where the last one ended. A read that finds nothing lasts at
// least 50 ms, even with no wait, and answers nothing only once the
// stream's leader has confirmed that nothing is there (UNAVAILABLE when it
// does not answer within the request timeout). A record trimmed by another
// process while a fetch of this one is still open on the server can be passed
// on once after the trim; trims made through this object never are.
//
// Thread safety: thread-safe; one connection serves every call.
#ifndef KVINDEXER_FLEET_JETSTREAM_EVENT_LOG_H_
#define KVINDEXER_FLEET_JETSTREAM_EVENT_LOG_H_

#include <memory>

#include "absl/status/statusor.h"
#include "fleet/event_log.h"
#include "fleet/fleet_config.h"
#include "fleet/nats_connection.h"

namespace kvindexer::fleet {

// Connects to NATS and creates the stream when it does not exist yet (with
// `config.replicas` replicas and the de-duplication window), or checks that
// the existing one can serve as the log. UNAVAILABLE when no server answers
// within the timeout; FAILED_PRECONDITION when the stream exists with
// settings the log cannot work with (the message says which).
[[nodiscard]] absl::StatusOr<std::unique_ptr<EventLog>> OpenJetStreamEventLog(
    const EventLogConfig& config);

// The same over a connection shared with other JetStream stores
// (fleet/jetstream_fleet.h); `config.nats` is not used (the client has
// its own).
[[nodiscard]] absl::StatusOr<std::unique_ptr<EventLog>> OpenJetStreamEventLogOn(
    std::shared_ptr<NatsClient> client, const EventLogConfig& config);

}  // namespace kvindexer::fleet

#endif  // KVINDEXER_FLEET_JETSTREAM_EVENT_LOG_H_
