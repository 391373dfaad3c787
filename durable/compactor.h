// Compaction: the next checkpoint, built off the serving path
// (docs/durability.md, "Checkpoints").
//
// The serving Indexer is never read. When the log rotates (under the
// Indexer's mutation mutex, so between two mutations) the closed log files
// and the checkpoint they start from describe the cut exactly; a compaction
// replays them through an Indexer of its own over an ImageBackend and
// writes what that holds as the checkpoint of the new generation. Queries
// and applies go on meanwhile. It merges when it can: only the blocks the
// logs name are rebuilt in memory, and the rest of the previous checkpoint
// is copied in order (durable/checkpoint_merge.h).
#ifndef KVINDEXER_DURABLE_COMPACTOR_H_
#define KVINDEXER_DURABLE_COMPACTOR_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "durable/build_deadline.h"
#include "durable/file_io.h"
#include "kvindexer/backend.h"

namespace kvindexer::durable {

// checkpoint-<base>.ckpt plus the closed logs wal-<base>.log to
// wal-<last_wal>.log give checkpoint-<last_wal + 1>.ckpt, the state at the
// start of wal-<last_wal + 1>.log.
struct CompactionJob {
  uint64_t base = 0;
  uint64_t last_wal = 0;
  // The serving backend, asked how large the image will be so that it
  // makes room up front: GetStats for the blocks and, when
  // counts_placements (ABI 1.2), CountPlacements for each worker's
  // holdings. Both only read, and never hold up queries (backend.h). Null:
  // the image grows as it goes.
  IndexBackend* sizes = nullptr;
  bool counts_placements = false;
  // Blocks to make room for when `sizes` is null (a build in a process of
  // its own cannot ask the backend); 0: none.
  uint64_t reserve_blocks = 0;
  uint64_t target() const { return last_wal + 1; }
};

// How a build makes the checkpoint.
enum class BuildMethod {
  kMergeWhenPossible,  // merge, or rebuild the whole image when it cannot
  kWhole,              // rebuild the whole image (tests compare the two)
};

// What a build does with the checkpoint it wrote.
enum class CheckpointFinish {
  kPublish,   // renames it into place (CheckpointWriter::Commit)
  kSealOnly,  // leaves it sealed as checkpoint-<target>.ckpt.tmp
};

// Builds the job's checkpoint in the data directory `dir`, reading and
// writing through `io` (null: the real calls), and finishes it as `finish`
// says. `stop` is asked between records, between checkpoint
// parts and once more after the file is sealed: when it has expired the
// work is abandoned (CANCELLED saying why; the temporary file is deleted).
// Errors name the file at fault; nothing of the serving state depends on
// them. REQUIRES: the job's files exist and no other compaction runs on
// `dir`.
absl::Status BuildCheckpoint(
    const std::string& dir, const CompactionJob& job, FileIo* io,
    const BuildDeadline& stop, CheckpointFinish finish,
    BuildMethod method = BuildMethod::kMergeWhenPossible);

// Commits checkpoint-<generation>.ckpt holding nothing: the state of a
// fresh directory.
absl::Status WriteEmptyCheckpoint(const std::string& dir, uint64_t generation,
                                  FileIo* io);

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_COMPACTOR_H_
