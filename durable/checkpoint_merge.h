// Building the next checkpoint by merging (docs/durability.md,
// "Checkpoints"). The closed logs of a build usually name a small part of
// the index, so instead of rebuilding every placement in memory the build:
//   1. lists the blocks the logs name: every hash of an apply, a replace or
//      a staged commit;
//   2. reads the base checkpoint, restoring every host record and, of the
//      placements, those of the listed blocks only, into an Indexer of its
//      own over an ImageBackend restricted to those blocks;
//   3. replays the logs through that Indexer, as a whole build does;
//   4. writes the host records, then reads the base again and writes its
//      placements in their order, leaving out those of listed blocks and
//      those of every (worker, tier) the replay cleared, with the image's
//      placements merged in.
// The result is the same file, byte for byte, as the whole build's: the
// image holds every placement of each listed block, so the replay gives
// their placements and token counts exactly; every other block can only
// have lost the placements that clears and removals took. Memory and hash
// map work grow with the blocks the logs name; the rest of the index is
// read, checked and written in order.
#ifndef KVINDEXER_DURABLE_CHECKPOINT_MERGE_H_
#define KVINDEXER_DURABLE_CHECKPOINT_MERGE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "durable/build_deadline.h"
#include "durable/checkpoint_file.h"
#include "durable/compactor.h"
#include "durable/file_io.h"

namespace kvindexer::durable {

enum class MergeOutcome {
  kWritten,       // *out holds the checkpoint, not yet sealed
  kNotMergeable,  // nothing was written; the whole build must run
};

// Writes the checkpoint of `job` by merging, through a new writer (*out);
// `io` (null: the real calls) reads and writes the files. kNotMergeable,
// with nothing written, when the logs name more than `max_blocks` blocks
// (0: no limit; past about half the index the whole build is the cheaper),
// when the listed blocks hold more than half the base's placements (then
// too), when the base's placements are not in the order every build writes
// (worker backend id, tier, then hash, ascending), or when the replay
// touched a block that step 1 did not list. Errors as for BuildCheckpoint
// (DATA_LOSS for a bad record in a closed log, INTERNAL for parts that do
// not parse or that the whole build's restore would refuse, and for a base
// that reads differently the second time; CANCELLED when `stop` expires).
[[nodiscard]] absl::StatusOr<MergeOutcome> WriteMergedCheckpoint(
    const std::string& dir, const CompactionJob& job, FileIo* io,
    const BuildDeadline& stop, uint64_t max_blocks,
    std::unique_ptr<CheckpointWriter>* out);

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_CHECKPOINT_MERGE_H_
