// Start-up recovery of a data directory into the serving Indexer
// (docs/durability.md, "Recovery").
//
// Every checkpoint-<g>.ckpt holds the state at the start of wal-<g>.log, and
// every log file has a checkpoint of its own or an earlier generation with
// every log file in between. Recovery therefore loads the newest checkpoint
// that reads back whole (a damaged one is renamed *.corrupt and the one
// before it is tried) and replays the log files from its generation on, in
// order. The first bad record ends the log: its file is cut there (when
// intact records follow it, the cut bytes are first kept beside the file
// and the loss is logged at ERROR: durable/wal_damage.h), and log files
// after it, or after a missing generation, are renamed *.corrupt because
// their records would apply after a hole (at ERROR when they hold records).
// With no usable checkpoint at all the state is lost: every log file is set
// aside and the directory starts over, empty, at a new generation. The
// report counts what was cut or set aside.
//
// A file of a newer format version stops recovery before anything in the
// directory is renamed, cut or written.
#ifndef KVINDEXER_DURABLE_RECOVERY_LOADER_H_
#define KVINDEXER_DURABLE_RECOVERY_LOADER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/durable_state.h"
#include "durable/data_dir.h"
#include "durable/file_io.h"
#include "durable/recovery_report.h"

namespace kvindexer::durable {

struct RecoveredDirectory {
  // checkpoint_generation, placements (from the checkpoint), log_records,
  // log_bytes and the three flags; the caller fills in the rest.
  RecoveryReport report;
  uint64_t base = 0;            // the checkpoint loaded (or just written)
  uint64_t wal_generation = 0;  // the log file to continue
  // Generations left in the directory, ascending: the base, older intact
  // checkpoints, and log files from before the base up to wal_generation.
  std::vector<uint64_t> checkpoints;
  std::vector<uint64_t> wals;
  // Generations of the wal-<g>.poisoned markers in the directory, ascending
  // (durable/wal_writer.h); the caller decides what they mean.
  std::vector<uint64_t> poison_markers;
  // The log file to continue was written in an older format version: a
  // binary of that version would read it, so it must not get records of
  // this version (the caller closes it behind a checkpoint).
  bool continued_log_older_format = false;
};

// Recovers `dir` into `indexer`, which must have applied nothing. A fresh
// directory gets an empty checkpoint of generation 1. Errors (the server
// must not start): FAILED_PRECONDITION for a file of a newer format version;
// INTERNAL for I/O errors and for records that parse or apply wrongly
// (durable/recovery_replay.h), after which `indexer` holds part of the state.
// Every file is read and written through `io` (not null).
absl::StatusOr<RecoveredDirectory> RecoverDirectory(DataDir& dir,
                                                    DurableState* indexer,
                                                    FileIo* io);

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_RECOVERY_LOADER_H_
