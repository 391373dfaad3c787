// A replica's start from the newest fleet snapshot (docs/fleet.md,
// "Replicas follow the log"): the snapshot goes into the fresh Indexer
// before the server serves, and the log is followed from the position after
// it.
#ifndef KVINDEXER_SERVER_REPLICA_SNAPSHOT_H_
#define KVINDEXER_SERVER_REPLICA_SNAPSHOT_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "core/indexer.h"
#include "fleet/snapshot_store.h"
#include "kvindexer_fleet.pb.h"

namespace kvindexer {

struct ReplicaStart {
  // The snapshot loaded; nullopt when the store held none.
  std::optional<::kvindexer::fleet::v1::SnapshotManifest> snapshot;
  uint64_t follow_from = 1;  // the first log position to read
  double seconds = 0;        // how long loading took
};

// Loads the newest snapshot of `store` into `indexer`. Errors name the
// snapshot (its id and position): the store's (UNAVAILABLE), DATA_LOSS for
// a damaged one, INVALID_ARGUMENT when the Indexer refuses a chunk; the
// Indexer is then partly loaded and must not serve. REQUIRES: `indexer`
// has applied nothing and does not serve yet.
[[nodiscard]] absl::StatusOr<ReplicaStart> LoadNewestSnapshot(
    fleet::SnapshotStore& store, Indexer& indexer);

// For a replica whose log was trimmed before it read it
// (server/log_follower.h, LogFollowerOptions::reload): finds the newest
// snapshot of `store`, then removes every worker of `indexer`
// (RemovalReason::kReload) and loads the snapshot in their place. Answers
// it, or nullopt when the store holds none (the index then untouched).
// Errors as LoadNewestSnapshot's; a failed removal is INTERNAL. After an
// error the index may be partly emptied or partly loaded: call again.
// Queries meanwhile see the index as it is at that moment, and health must
// say NOT_SERVING. REQUIRES: nothing else mutates `indexer` meanwhile (a
// replica's only writer is its follower).
[[nodiscard]] absl::StatusOr<
    std::optional<::kvindexer::fleet::v1::SnapshotManifest>>
ReloadNewestSnapshot(fleet::SnapshotStore& store, Indexer& indexer);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_REPLICA_SNAPSHOT_H_
