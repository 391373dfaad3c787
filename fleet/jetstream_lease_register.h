// The JetStream driver of LeaseRegister (fleet/lease_register.h;
// docs/fleet.md, "The snapshot lease"): the key "writer" of the key-value
// bucket <stream>_LEASE (history 1). The register's revision is the key's
// revision, and a conditional write is the bucket's create or update on the
// last revision.
//
// Thread safety: thread-safe.
#ifndef KVINDEXER_FLEET_JETSTREAM_LEASE_REGISTER_H_
#define KVINDEXER_FLEET_JETSTREAM_LEASE_REGISTER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "fleet/fleet_config.h"
#include "fleet/lease_register.h"
#include "fleet/nats_connection.h"

namespace kvindexer::fleet {

// Opens the bucket, creating it (with `config.replicas` replicas) when it
// does not exist yet. UNAVAILABLE when the server does not answer;
// FAILED_PRECONDITION when it refuses to create the bucket.
[[nodiscard]] absl::StatusOr<std::unique_ptr<LeaseRegister>>
OpenJetStreamLeaseRegister(std::shared_ptr<NatsClient> client,
                           const EventLogConfig& config);

}  // namespace kvindexer::fleet

#endif  // KVINDEXER_FLEET_JETSTREAM_LEASE_REGISTER_H_
