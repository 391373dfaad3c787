// The byte layout of the data directory's files (docs/durability.md, "File
// format"): a file header, then framed records.
//
//   header: magic (8 bytes: "KVIXWAL1" or "KVIXCKP1"), format version
//           (u32), reserved (u32, 0), generation (u64), CRC32C of the
//           previous 24 bytes (u32); 28 bytes, little-endian.
//   record: payload length (u32), CRC32C of the payload (u32), payload.
//
// A checkpoint ends with a trailer record whose payload is the trailer
// magic "KVIXEND1" and the number of records before it (u64): a checkpoint
// without it is incomplete.
#ifndef KVINDEXER_DURABLE_RECORD_FRAMING_H_
#define KVINDEXER_DURABLE_RECORD_FRAMING_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kvindexer::durable {

// The newest format this binary writes and reads. Version 2 files may name
// streams other than legacy ones (docs/contract.md, "Streams"): a binary
// that knows only version 1 refuses them instead of merging streams that
// share a worker id. Version 1 files are read as legacy streams only.
// Version 3 logs may hold the placement bound's evictions (WAL op 9) and
// its checkpoints the evicted mark: a version 2 binary refuses them rather
// than stop at a record it does not know or drop the mark.
inline constexpr uint32_t kFormatVersion = 3;
inline constexpr size_t kFileHeaderBytes = 28;
inline constexpr size_t kRecordHeaderBytes = 8;
// Larger lengths are impossible: they mark a corrupt record.
inline constexpr uint32_t kMaxRecordBytes = 1u << 30;

enum class FileKind { kWal, kCheckpoint };

struct FileHeader {
  FileKind kind = FileKind::kWal;
  uint32_t version = 0;
  uint64_t generation = 0;
};

std::string EncodeFileHeader(FileKind kind, uint64_t generation);
// DATA_LOSS for a short, foreign or corrupt header (wrong magic for `kind`,
// bad CRC); FAILED_PRECONDITION naming both versions when `version` is newer
// than kFormatVersion (such a file is never repaired or deleted).
absl::StatusOr<FileHeader> DecodeFileHeader(std::string_view bytes,
                                            FileKind kind);

// Appends the framed `payload` to *out. REQUIRES: 0 < payload.size() <=
// kMaxRecordBytes (a zero length reads back as corrupt: see ReadRecord).
void AppendRecord(std::string_view payload, std::string* out);

// The result of reading one record at the start of `bytes`.
struct RecordRead {
  enum class Outcome {
    kOk,           // payload is the record; `size` bytes were consumed
    kEnd,          // `bytes` is empty
    kIncomplete,   // a header or payload cut short
    kBadLength,    // a length of zero or above kMaxRecordBytes
    kBadChecksum,  // the CRC does not match
  };
  Outcome outcome = Outcome::kEnd;
  std::string_view payload;
  size_t size = 0;
};
RecordRead ReadRecord(std::string_view bytes);
// The payload length the record header at the start of `bytes` gives,
// valid or not. REQUIRES: bytes.size() >= kRecordHeaderBytes.
uint32_t RecordPayloadLength(std::string_view bytes);
// What went wrong, for messages: "record cut short", ...
std::string_view DescribeOutcome(RecordRead::Outcome outcome);

// The checkpoint trailer's payload, and its record count when `payload` is
// one (nullopt otherwise).
std::string EncodeCheckpointTrailer(uint64_t records);
std::optional<uint64_t> DecodeCheckpointTrailer(std::string_view payload);

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_RECORD_FRAMING_H_
