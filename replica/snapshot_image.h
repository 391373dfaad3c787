// SnapshotImage: the index as the log leaves it at one position, kept off
// the serving path so that a snapshot can be written without reading the
// serving index (docs/fleet.md, "Snapshots"). It is an Indexer of its own
// over an ImageBackend: it loads the previous snapshot, takes the log's
// later records through ApplyLogRecord as every replica does, and exports
// what it holds in the checkpoint chunks of docs/durability.md,
// "Checkpoints", packed into SnapshotParts.
//
// Thread safety: none; one snapshot writer owns it.
#ifndef KVINDEXER_REPLICA_SNAPSHOT_IMAGE_H_
#define KVINDEXER_REPLICA_SNAPSHOT_IMAGE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "core/request_limits.h"
#include "fleet/event_log.h"
#include "kv_indexer_state.pb.h"
#include "kvindexer_fleet.pb.h"
#include "replica/record_applier.h"

namespace kvindexer::replica {

class SnapshotImage {
 public:
  // `limits` are the replicas' own: a record refused by them for a bound
  // must be refused here too, or the snapshot would hold what no replica
  // does.
  explicit SnapshotImage(const RequestLimits& limits);
  ~SnapshotImage();
  SnapshotImage(const SnapshotImage&) = delete;
  SnapshotImage& operator=(const SnapshotImage&) = delete;

  // Installs one chunk of a stored snapshot (replica/snapshot_reader.h);
  // chunks come in order. Then SetPosition(the manifest's position).
  // REQUIRES: no record applied yet.
  absl::Status LoadChunk(const state::v1::CheckpointChunk& chunk);
  void SetPosition(uint64_t position) { position_ = position; }

  // The last log position the image includes (0: none).
  uint64_t position() const { return position_; }

  // Applies `record` when it lies past position() and moves position() to
  // it; a record at or below position() is already in the image and is
  // skipped (nullopt).
  std::optional<RecordResult> Apply(const fleet::LoggedRecord& record);
  // The same for a record already decoded at `position` under `worker_id`
  // (a staged commit with its payload fetched, replica/commit_payload.h).
  std::optional<RecordResult> ApplyDecoded(
      uint64_t position, std::string_view worker_id,
      const ::kvindexer::fleet::v1::LogRecord& record);
  // Moves position() to `position` without applying anything, as every
  // replica passes a record it cannot apply.
  void Pass(uint64_t position);

  // Hands the image to `sink` as serialised SnapshotParts of at most
  // `max_part_bytes` each, with the number of chunks in each; stops at the
  // first error of `sink`. INVALID_ARGUMENT when one chunk alone exceeds
  // `max_part_bytes` (REQUIRES: max_part_bytes >= 256 KiB avoids that).
  absl::Status Export(
      size_t max_part_bytes,
      absl::FunctionRef<absl::Status(std::string_view part, uint64_t chunks)>
          sink);

 private:
  struct State;
  std::unique_ptr<State> state_;
  uint64_t position_ = 0;
};

}  // namespace kvindexer::replica

#endif  // KVINDEXER_REPLICA_SNAPSHOT_IMAGE_H_
