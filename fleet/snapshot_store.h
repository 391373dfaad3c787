// Where fleet mode keeps its snapshots (docs/fleet.md, "Snapshots"): each
// is a sequence of parts followed by a manifest, and only snapshots whose
// manifest was written exist. The JetStream driver keeps them in a stream
// of their own; MemorySnapshotStore (fleet/memory_snapshot_store.h) has the
// same semantics in one process, for tests.
//
// Beside the snapshots the store keeps payloads: the placements of a staged
// commit too large for one log record (docs/fleet.md, "Staged commits
// larger than one record"), in parts of the same format. A payload has no
// manifest: the log record that names it says how many parts it has. Its
// ids are a namespace of their own, and List never shows a payload.
//
// Thread safety: implementations are thread-safe.
#ifndef KVINDEXER_FLEET_SNAPSHOT_STORE_H_
#define KVINDEXER_FLEET_SNAPSHOT_STORE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kvindexer_fleet.pb.h"

namespace kvindexer::fleet {

class SnapshotStore {
 public:
  // One snapshot being written. Destroying a writer that was not committed
  // abandons its parts (they are never visible; the store removes them
  // when it can).
  class Writer {
   public:
    virtual ~Writer() = default;
    // Stores the next part. REQUIRES: part.size() <= max_part_bytes().
    [[nodiscard]] virtual absl::Status AddPart(std::string_view part) = 0;
    // Stores the manifest, which makes the snapshot visible. The manifest's
    // parts count must equal the parts added (else INVALID_ARGUMENT).
    [[nodiscard]] virtual absl::Status Commit(
        const ::kvindexer::fleet::v1::SnapshotManifest& manifest) = 0;
  };

  // One payload being written. A payload has no commit: its parts are
  // kept when the writer is destroyed, for the log record that will name
  // them; a writer that gives up removes them with DeletePayload.
  class PayloadWriter {
   public:
    virtual ~PayloadWriter() = default;
    // Stores the next part. REQUIRES: part.size() <= max_part_bytes().
    [[nodiscard]] virtual absl::Status AddPart(std::string_view part) = 0;
  };

  virtual ~SnapshotStore() = default;

  // Starts a snapshot under `id`, which must not be in use
  // (ALREADY_EXISTS) and is a non-empty string of [A-Za-z0-9_-].
  [[nodiscard]] virtual absl::StatusOr<std::unique_ptr<Writer>> Begin(
      std::string_view id) = 0;

  // The committed snapshots, by position ascending (ties: commit order).
  [[nodiscard]] virtual absl::StatusOr<
      std::vector<::kvindexer::fleet::v1::SnapshotManifest>>
  List() = 0;

  // Hands the parts of a committed snapshot to `on_part`, in order. NOT_FOUND
  // when it is gone; DATA_LOSS when a part is missing or the count differs
  // from the manifest's; the first error of `on_part`.
  [[nodiscard]] virtual absl::Status ReadParts(
      const ::kvindexer::fleet::v1::SnapshotManifest& manifest,
      absl::FunctionRef<absl::Status(std::string_view part)> on_part) = 0;

  // Removes a snapshot, manifest first. Removing one that is gone is OK.
  [[nodiscard]] virtual absl::Status Delete(
      const ::kvindexer::fleet::v1::SnapshotManifest& manifest) = 0;

  // Removes the parts of snapshots that were never committed and were
  // last written to before `oldest_kept` was committed: what writers that
  // died half way left behind (a Writer destroyed uncommitted removes its
  // own). Ids this object is writing are left alone. Answers how many
  // snapshots' parts were removed. A writer of another process that was
  // stalled that long and then commits leaves a snapshot that does not add
  // up (DATA_LOSS), which readers pass over (docs/fleet.md, "Snapshots").
  [[nodiscard]] virtual absl::StatusOr<size_t> RemoveAbandoned(
      const ::kvindexer::fleet::v1::SnapshotManifest& oldest_kept) = 0;

  // Starts a payload under `id`, which must not be in use as a payload
  // (ALREADY_EXISTS); ids are as for Begin.
  [[nodiscard]] virtual absl::StatusOr<std::unique_ptr<PayloadWriter>>
  BeginPayload(std::string_view id) = 0;

  // Hands the parts of payload `id` to `on_part`, in order. NOT_FOUND when
  // the store holds no part of it; DATA_LOSS when it holds another number
  // than `parts` or a part is missing; the first error of `on_part`.
  [[nodiscard]] virtual absl::Status ReadPayload(
      std::string_view id, uint64_t parts,
      absl::FunctionRef<absl::Status(std::string_view part)> on_part) = 0;

  // The ids of the payloads whose last part was stored before `snapshot`
  // was committed, leaving out those this object is writing. NOT_FOUND
  // when `snapshot` is gone.
  [[nodiscard]] virtual absl::StatusOr<std::vector<std::string>>
  PayloadsStoredBefore(
      const ::kvindexer::fleet::v1::SnapshotManifest& snapshot) = 0;

  // Removes a payload. Removing one that is gone is OK.
  [[nodiscard]] virtual absl::Status DeletePayload(std::string_view id) = 0;

  // The largest part AddPart accepts.
  virtual size_t max_part_bytes() const = 0;
};

}  // namespace kvindexer::fleet

#endif  // KVINDEXER_FLEET_SNAPSHOT_STORE_H_
