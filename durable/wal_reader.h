// Reading a write-ahead log file at start-up (docs/durability.md,
// "Recovery").
#ifndef KVINDEXER_DURABLE_WAL_READER_H_
#define KVINDEXER_DURABLE_WAL_READER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "durable/file_io.h"

namespace kvindexer::durable {

struct WalScan {
  uint64_t generation = 0;  // from the header
  uint64_t records = 0;     // intact records handed to the callback
  uint64_t bytes = 0;       // file bytes, header included, that were intact
  // The first incomplete, impossibly long or CRC-failing record and
  // everything after it: where it started and how many bytes were dropped.
  bool torn = false;
  uint64_t torn_offset = 0;
  uint64_t dropped_bytes = 0;
  // With repair only (durable/wal_damage.h): the dropped bytes were damage,
  // not a torn tail (intact records follow the bad one, or the file's whole
  // header is bad); how many intact records they held; and where they are
  // kept.
  bool damaged = false;
  uint64_t dropped_records = 0;
  std::string kept_copy;
};

// Hands every intact record's payload of the log file `path` to
// `on_record`, in order. The first bad record ends the log. With `repair`
// the file is truncated there (and synced):
//  - a torn tail (no intact record follows the bad one) is logged at WARN,
//    naming the file, the offset and the bytes dropped ("wal: truncated
//    corrupt tail ...");
//  - damage (intact records follow it) is logged at ERROR ("wal: damaged
//    record in the middle of the log ..."), and the bytes dropped are first
//    kept beside the file (KeepCutBytes).
// A file shorter than a header counts as entirely torn, one with a whole
// but bad header as entirely damaged; repair rewrites either as an empty log
// of generation `expected_generation`.
// Errors: FAILED_PRECONDITION for a newer format version (the file is left
// alone); the first non-OK status of `on_record`, which stops the scan;
// INTERNAL for I/O errors, and when the bytes to be dropped cannot be kept
// (the file is then not cut).
// The file is read a piece at a time (durable/file_window.h): only a piece,
// or the record at hand when it is larger, is held in memory, and records
// are handed over as they are read, so a read error can come after some.
// A failed read is never taken for damage: nothing is cut then. Reads,
// and the writes of a repair, go through `io`.
absl::StatusOr<WalScan> ScanWal(
    const std::string& path, uint64_t expected_generation, bool repair,
    absl::FunctionRef<absl::Status(std::string_view payload)> on_record,
    FileIo& io = FileIo::Real());

// ScanWal, reading `piece_bytes` at a time (tests read in tiny pieces).
absl::StatusOr<WalScan> ScanWalInPieces(
    const std::string& path, uint64_t expected_generation, bool repair,
    absl::FunctionRef<absl::Status(std::string_view payload)> on_record,
    size_t piece_bytes, FileIo& io = FileIo::Real());

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_WAL_READER_H_
