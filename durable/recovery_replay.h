// Feeding the data directory's files into an Indexer (docs/durability.md,
// "Recovery"): a checkpoint through DurableState::Restore, a log through
// DurableState::Replay. Start-up recovery uses them on the serving Indexer, a
// compaction on an Indexer of its own.
//
// A record whose checksum holds but whose content does not parse, or that
// the Indexer refuses, was written by a broken binary, not damaged on disk:
// it is reported as INTERNAL naming the file, never treated as a corrupt
// tail, so that nothing after it is silently dropped.
#ifndef KVINDEXER_DURABLE_RECOVERY_REPLAY_H_
#define KVINDEXER_DURABLE_RECOVERY_REPLAY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/durable_state.h"
#include "durable/build_deadline.h"
#include "durable/file_io.h"
#include "durable/wal_reader.h"

namespace kvindexer::durable {

struct CheckpointLoad {
  uint64_t records = 0;
  uint64_t placements = 0;  // hashes of the TierPlacements parts
};

// Restores every part of the checkpoint file `path` into `indexer`.
// Errors: ReadCheckpoint's (DATA_LOSS for a damaged file, from which nothing
// was restored; FAILED_PRECONDITION for a newer format version; INTERNAL for
// I/O), and INTERNAL for a part that does not parse or that Restore refuses
// (the Indexer then holds the parts before it). When `stop` (if given)
// expires the load ends early with CANCELLED saying why. The file is read
// through `io`.
absl::StatusOr<CheckpointLoad> LoadCheckpoint(
    const std::string& path, DurableState* indexer,
    const BuildDeadline* stop = nullptr, FileIo& io = FileIo::Real());

// Replays every intact record of wal-<generation>.log at `path` into
// `indexer`; `repair` as for ScanWal. Errors: ScanWal's, and INTERNAL for a
// record that does not parse or that Replay refuses; CANCELLED as for
// LoadCheckpoint; read through `io`.
absl::StatusOr<WalScan> ReplayWal(const std::string& path, uint64_t generation,
                                  bool repair, DurableState* indexer,
                                  const BuildDeadline* stop = nullptr,
                                  FileIo& io = FileIo::Real());

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_RECOVERY_REPLAY_H_
