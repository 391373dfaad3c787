#include "server/replica_snapshot.h"

#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/removal_reason.h"
#include "core/worker_snapshot.h"
#include "fleet/snapshot_reader.h"

namespace kvindexer {
namespace {

using ::kvindexer::fleet::v1::SnapshotManifest;

absl::StatusOr<std::optional<SnapshotManifest>> FindNewest(
    fleet::SnapshotStore& store) {
  absl::StatusOr<std::optional<SnapshotManifest>> newest =
      fleet::NewestSnapshot(store);
  if (!newest.ok()) {
    return absl::Status(newest.status().code(),
                        absl::StrCat("cannot list the fleet snapshots: ",
                                     newest.status().message()));
  }
  return newest;
}

absl::Status LoadSnapshot(fleet::SnapshotStore& store,
                          const SnapshotManifest& manifest, Indexer& indexer) {
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
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ReplicaStart> LoadNewestSnapshot(fleet::SnapshotStore& store,
                                                Indexer& indexer) {
  const auto started = std::chrono::steady_clock::now();
  ReplicaStart start;
  absl::StatusOr<std::optional<SnapshotManifest>> newest = FindNewest(store);
  if (!newest.ok()) return newest.status();
  if (!newest->has_value()) return start;
  const SnapshotManifest& manifest = **newest;
  if (absl::Status s = LoadSnapshot(store, manifest, indexer); !s.ok()) {
    return s;
  }
  start.snapshot = manifest;
  start.follow_from = manifest.position() + 1;
  start.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  return start;
}

absl::StatusOr<std::optional<SnapshotManifest>> ReloadNewestSnapshot(
    fleet::SnapshotStore& store, Indexer& indexer) {
  absl::StatusOr<std::optional<SnapshotManifest>> newest = FindNewest(store);
  if (!newest.ok() || !newest->has_value()) return newest;
  for (const WorkerSnapshot& worker :
       indexer.ListWorkers(/*placement_counts=*/false)) {
    absl::Status removed =
        indexer.RemoveWorker(worker.worker_id, RemovalReason::kReload);
    // NOT_FOUND: gone already (a sweep or an earlier, failed reload).
    if (!removed.ok() && !absl::IsNotFound(removed)) {
      return absl::Status(
          removed.code(),
          absl::StrCat("cannot empty the index to reload fleet snapshot \"",
                       (*newest)->id(), "\": ", removed.message()));
    }
  }
  if (absl::Status s = LoadSnapshot(store, **newest, indexer); !s.ok()) {
    return s;
  }
  return newest;
}

}  // namespace kvindexer
