// The JetStream driver of SnapshotStore (fleet/snapshot_store.h; docs/fleet.md,
// "Snapshots"): the stream <stream>_SNAPSHOTS holds every snapshot under
// <prefix>.snap.>. Snapshot ID's parts are the messages of
// <prefix>.snap.<ID>.p, in stream order, each numbered in its "Kvi-Part"
// header; its manifest is the one message of <prefix>.snap.<ID>.m, written
// last: a snapshot exists once its manifest does. Deleting purges the
// manifest first, then the parts. Payload ID's parts are the messages of
// <prefix>.snap.<ID>.c, numbered the same way.
//
// Ids in use are known to the server (any message under the id) and, for
// writers not yet past their first part, to this object only: two processes
// that begin the same id at once are not told apart (snapshot ids carry
// the writer's name, replica/snapshot_writer.cc).
//
// Thread safety: thread-safe. REQUIRES: the store outlives its writers.
#ifndef KVINDEXER_FLEET_JETSTREAM_SNAPSHOT_STORE_H_
#define KVINDEXER_FLEET_JETSTREAM_SNAPSHOT_STORE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "fleet/fleet_config.h"
#include "fleet/nats_connection.h"
#include "fleet/snapshot_store.h"

namespace kvindexer::fleet {

// Creates the stream when it does not exist yet (file storage,
// `config.replicas` replicas), or checks the one there. UNAVAILABLE when the
// server does not answer; FAILED_PRECONDITION when the stream exists with
// settings the store cannot work with (the message says which).
[[nodiscard]] absl::StatusOr<std::unique_ptr<SnapshotStore>>
OpenJetStreamSnapshotStore(std::shared_ptr<NatsClient> client,
                           const EventLogConfig& config);

}  // namespace kvindexer::fleet

#endif  // KVINDEXER_FLEET_JETSTREAM_SNAPSHOT_STORE_H_
