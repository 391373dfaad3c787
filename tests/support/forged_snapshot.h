// CommitForgedSnapshot: a stored snapshot under a manifest a test wrote
// itself (a wrong chunk count, a newer format version, another position),
// with the parts of a real one, so that readers can be shown what they do
// with a manifest no writer of this build would commit.
#ifndef KVINDEXER_TESTS_SUPPORT_FORGED_SNAPSHOT_H_
#define KVINDEXER_TESTS_SUPPORT_FORGED_SNAPSHOT_H_

#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fleet/snapshot_store.h"
#include "kvindexer_fleet.pb.h"

namespace kvindexer::test_support {

// Copies the parts of `real` into a new snapshot of `store` and commits it
// under `forged` (whose id names the copy).
inline absl::Status CommitForgedSnapshot(
    fleet::SnapshotStore& store,
    const ::kvindexer::fleet::v1::SnapshotManifest& real,
    const ::kvindexer::fleet::v1::SnapshotManifest& forged) {
  absl::StatusOr<std::unique_ptr<fleet::SnapshotStore::Writer>> writer =
      store.Begin(forged.id());
  if (!writer.ok()) return writer.status();
  if (absl::Status s = store.ReadParts(
          real,
          [&](std::string_view part) { return (*writer)->AddPart(part); });
      !s.ok()) {
    return s;
  }
  return (*writer)->Commit(forged);
}

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_FORGED_SNAPSHOT_H_
