#include "replica/replica_snapshot.h"

#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/removal_reason.h"
#include "core/worker_snapshot.h"
#include "replica/snapshot_reader.h"
#include "spdlog/spdlog.h"

namespace kvindexer::replica {
namespace {

using ::kvindexer::fleet::v1::SnapshotManifest;

absl::Status LoadSnapshot(fleet::SnapshotStore& store,
                          const SnapshotManifest& manifest,
                          DurableState& state) {
  absl::Status loaded = ReadSnapshotChunks(
      store, manifest, [&](const state::v1::CheckpointChunk& chunk) {
        return state.Restore(chunk);
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

// Removes every worker, and with it every placement, from the index.
absl::Status EmptyIndex(OperatorView& workers) {
  for (const WorkerSnapshot& worker :
       workers.ListWorkers(/*placement_counts=*/false)) {
    absl::Status removed =
        workers.RemoveWorker(worker.worker_id, RemovalReason::kReload);
    // NOT_FOUND: gone already (a sweep, or an earlier failed reload).
    if (!removed.ok() && !absl::IsNotFound(removed)) {
      return absl::Status(
          removed.code(),
          absl::StrCat("cannot empty the index: ", removed.message()));
    }
  }
  return absl::OkStatus();
}

// What a snapshot that cannot be used looks like, as opposed to a store
// that cannot be reached: it does not parse or add up (DATA_LOSS), the
// Indexer refuses a chunk (INVALID_ARGUMENT), or retention deleted it after
// it was listed (NOT_FOUND).
bool Unusable(const absl::Status& status) {
  return absl::IsDataLoss(status) || absl::IsInvalidArgument(status) ||
         absl::IsNotFound(status);
}

// Loads the newest snapshot that loads whole, passing over unusable ones
// (each logged) and emptying the index before each attempt when `empty`
// or after a failed one. nullopt when the store holds none; DATA_LOSS
// naming the newest when it holds some but none loads. When one vanished
// meanwhile, retention may have replaced it with a newer one: the list is
// read again, a few times.
absl::StatusOr<std::optional<SnapshotManifest>> LoadNewestWhole(
    fleet::SnapshotStore& store, DurableState& state, OperatorView& workers,
    bool empty) {
  constexpr int kPasses = 3;
  absl::Status failure;
  for (int pass = 1; pass <= kPasses; ++pass) {
    absl::StatusOr<std::vector<SnapshotManifest>> all = store.List();
    if (!all.ok()) {
      return absl::Status(all.status().code(),
                          absl::StrCat("cannot list the fleet snapshots: ",
                                       all.status().message()));
    }
    if (all->empty()) return std::optional<SnapshotManifest>();
    absl::Status newest_failure;
    bool vanished = false;
    for (auto it = all->rbegin(); it != all->rend(); ++it) {
      // Before the index is emptied: a replica that cannot read the newest
      // snapshot keeps what it holds.
      if (absl::Status s = CheckSnapshotFormat(*it); !s.ok()) return s;
      if (empty) {
        if (absl::Status s = EmptyIndex(workers); !s.ok()) return s;
      }
      absl::Status loaded = LoadSnapshot(store, *it, state);
      if (loaded.ok()) return std::optional<SnapshotManifest>(*it);
      if (!Unusable(loaded)) return loaded;
      spdlog::warn("{}; trying the next older fleet snapshot",
                   loaded.ToString());
      if (newest_failure.ok()) newest_failure = loaded;
      vanished = vanished || absl::IsNotFound(loaded);
      empty = true;  // whatever the failed one loaded goes
    }
    if (absl::Status s = EmptyIndex(workers); !s.ok()) return s;
    failure = absl::DataLossError(
        absl::StrCat("none of the ", all->size(),
                     " fleet snapshots loads whole; the newest: ",
                     newest_failure.message()));
    if (!vanished) break;
  }
  return failure;
}

}  // namespace

absl::StatusOr<ReplicaStart> LoadNewestSnapshot(fleet::SnapshotStore& store,
                                                DurableState& state,
                                                OperatorView& workers) {
  const auto started = std::chrono::steady_clock::now();
  absl::StatusOr<std::optional<SnapshotManifest>> loaded =
      LoadNewestWhole(store, state, workers, /*empty=*/false);
  if (!loaded.ok()) return loaded.status();
  ReplicaStart start;
  if (!loaded->has_value()) return start;
  start.snapshot = **loaded;
  start.follow_from = start.snapshot->position() + 1;
  start.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  return start;
}

absl::StatusOr<std::optional<SnapshotManifest>> ReloadNewestSnapshot(
    fleet::SnapshotStore& store, DurableState& state, OperatorView& workers) {
  return LoadNewestWhole(store, state, workers, /*empty=*/true);
}

}  // namespace kvindexer::replica
