#include "server/replica_snapshot.h"

#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "fleet/snapshot_reader.h"

namespace kvindexer {

absl::StatusOr<ReplicaStart> LoadNewestSnapshot(fleet::SnapshotStore& store,
                                                Indexer& indexer) {
  const auto started = std::chrono::steady_clock::now();
  ReplicaStart start;
  absl::StatusOr<std::optional<::kvindexer::fleet::v1::SnapshotManifest>>
      newest = fleet::NewestSnapshot(store);
  if (!newest.ok()) {
    return absl::Status(newest.status().code(),
                        absl::StrCat("cannot list the fleet snapshots: ",
                                     newest.status().message()));
  }
  if (!newest->has_value()) return start;
  const ::kvindexer::fleet::v1::SnapshotManifest& manifest = **newest;
  absl::Status loaded = fleet::ReadSnapshotChunks(
      store, manifest, [&](const state::v1::CheckpointChunk& chunk) {
        return indexer.Restore(chunk);
      });
  if (!loaded.ok()) {
    return absl::Status(
        loaded.code(),
        absl::StrCat("cannot load fleet snapshot \"", manifest.id(),
                     "\" at position ", manifest.position(), ": ",
                     loaded.message()));
  }
  start.snapshot = manifest;
  start.follow_from = manifest.position() + 1;
  start.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  return start;
}

}  // namespace kvindexer
