// A replica's start from the newest fleet snapshot (docs/fleet.md,
// "Replicas follow the log"): the snapshot goes into the fresh Indexer
// before the server serves, and the log is followed from the position after
// it. Each call takes two faces of that one Indexer: `state`
// (core/durable_state.h), which the snapshot is restored into, and
// `workers` (core/operator_view.h), which empties the index when a load
// must start again. REQUIRES: both are faces of the same Indexer.
#ifndef KVINDEXER_REPLICA_REPLICA_SNAPSHOT_H_
#define KVINDEXER_REPLICA_REPLICA_SNAPSHOT_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "core/durable_state.h"
#include "core/operator_view.h"
#include "fleet/snapshot_store.h"
#include "kvindexer_fleet.pb.h"

namespace kvindexer::replica {

struct ReplicaStart {
  // The snapshot loaded; nullopt when the store held none.
  std::optional<::kvindexer::fleet::v1::SnapshotManifest> snapshot;
  uint64_t follow_from = 1;  // the first log position to read
  double seconds = 0;        // how long loading took
};

// Loads the newest snapshot of `store` that loads whole into the Indexer. One
// that cannot be used (DATA_LOSS: damaged; INVALID_ARGUMENT: the Indexer
// refuses a chunk; NOT_FOUND: deleted by retention after it was listed) is
// logged and passed over for the next older, the index emptied of what it
// left (RemovalReason::kReload). Errors name the snapshot (its id and
// position): the store's (UNAVAILABLE), returned at once with the Indexer
// partly loaded; FAILED_PRECONDITION (CheckSnapshotFormat) when the next
// snapshot to try is of a newer format, returned before it is read or the
// index emptied for it; and DATA_LOSS naming the newest when snapshots
// exist but none loads. After an error the Indexer must not serve. REQUIRES:
// the Indexer has applied nothing and does not serve yet.
[[nodiscard]] absl::StatusOr<ReplicaStart> LoadNewestSnapshot(
    fleet::SnapshotStore& store, DurableState& state, OperatorView& workers);

// For a replica whose log was trimmed before it read it
// (replica/log_follower.h, LogFollowerOptions::reload): lists the snapshots
// of `store`; when there are any, removes every worker of the Indexer
// (RemovalReason::kReload) and loads the newest that loads whole, as
// LoadNewestSnapshot does. Answers it, or nullopt when the store holds none
// (the index then untouched, as it is when the newest is of a newer
// format). Errors as LoadNewestSnapshot's; a failed
// removal is INTERNAL. After an error the index may be partly emptied or
// partly loaded: call again. Queries meanwhile see the index as it is at
// that moment, and health must say NOT_SERVING. REQUIRES: nothing else
// mutates the Indexer meanwhile (a replica's only writer is its follower).
[[nodiscard]] absl::StatusOr<
    std::optional<::kvindexer::fleet::v1::SnapshotManifest>>
ReloadNewestSnapshot(fleet::SnapshotStore& store, DurableState& state,
                     OperatorView& workers);

}  // namespace kvindexer::replica

#endif  // KVINDEXER_REPLICA_REPLICA_SNAPSHOT_H_
