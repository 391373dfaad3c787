// Packs checkpoint chunks into the SnapshotParts fleet mode stores
// (docs/fleet.md, "Snapshots"): each part a serialised SnapshotPart of at
// most a given size, handed to a sink as soon as the next chunk would not
// fit. Snapshots (replica/snapshot_image.h) and the payloads of large staged
// commits (replica/commit_payload.h) are stored in this one format.
//
// Thread safety: none; one writer owns it.
#ifndef KVINDEXER_REPLICA_SNAPSHOT_PART_PACKER_H_
#define KVINDEXER_REPLICA_SNAPSHOT_PART_PACKER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "kv_indexer_state.pb.h"
#include "kvindexer_fleet.pb.h"

namespace kvindexer::replica {

// Placements per TierPlacements chunk: at most 8 + 5 + 5 bytes each (a hash,
// a mask and a size), so a chunk stays under 160 KiB and any part size from
// 256 KiB holds at least one.
inline constexpr size_t kPlacementsPerChunk = 8192;

class SnapshotPartPacker {
 public:
  // Owned by the packer: a lambda written in the constructor's call would
  // not outlive that statement.
  using Sink =
      std::function<absl::Status(std::string_view part, uint64_t chunks)>;

  SnapshotPartPacker(size_t max_part_bytes, Sink sink);

  // Adds `chunk` to the part being filled, first handing that part to the
  // sink when the chunk would not fit. After the first error (the sink's,
  // or INVALID_ARGUMENT for a chunk that alone exceeds max_part_bytes)
  // nothing more is added.
  void Add(const state::v1::CheckpointChunk& chunk);
  // Hands the last part, when it holds anything, to the sink; the first
  // error met.
  [[nodiscard]] absl::Status Finish();

 private:
  void Flush();

  const size_t max_part_bytes_;
  Sink sink_;
  absl::Status status_;
  ::kvindexer::fleet::v1::SnapshotPart part_;
  size_t part_bytes_ = 0;
  std::string serialized_;
};

}  // namespace kvindexer::replica

#endif  // KVINDEXER_REPLICA_SNAPSHOT_PART_PACKER_H_
