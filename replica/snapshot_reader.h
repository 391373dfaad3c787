// Reading a stored snapshot chunk by chunk (docs/fleet.md, "Snapshots"), for
// a replica that starts from it and for the snapshot writer that builds the
// next one on it.
#ifndef KVINDEXER_REPLICA_SNAPSHOT_READER_H_
#define KVINDEXER_REPLICA_SNAPSHOT_READER_H_

#include <optional>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fleet/snapshot_store.h"
#include "kv_indexer_state.pb.h"

namespace kvindexer::replica {

// FAILED_PRECONDITION naming both versions when `manifest` says a
// checkpoint format newer than this binary's (durable::kFormatVersion);
// 0, from manifests written before the field, passes.
[[nodiscard]] absl::Status CheckSnapshotFormat(
    const ::kvindexer::fleet::v1::SnapshotManifest& manifest);

// Hands every chunk of `manifest`'s snapshot to `on_chunk`, in order.
// CheckSnapshotFormat's error before anything is read; DATA_LOSS
// when a part does not parse or the chunk count differs from the
// manifest's; the store's errors; the first error of `on_chunk`.
[[nodiscard]] absl::Status ReadSnapshotChunks(
    fleet::SnapshotStore& store,
    const ::kvindexer::fleet::v1::SnapshotManifest& manifest,
    absl::FunctionRef<absl::Status(const state::v1::CheckpointChunk& chunk)>
        on_chunk);

// The newest committed snapshot, nullopt when there is none.
[[nodiscard]] absl::StatusOr<
    std::optional<::kvindexer::fleet::v1::SnapshotManifest>>
NewestSnapshot(fleet::SnapshotStore& store);

}  // namespace kvindexer::replica

#endif  // KVINDEXER_REPLICA_SNAPSHOT_READER_H_
