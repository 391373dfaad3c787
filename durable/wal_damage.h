// Telling damage from a torn tail when recovery cuts a log file
// (docs/durability.md, "Recovery"), and keeping what it cuts.
//
// A crash can only tear the end of a log: the records it was writing. When
// intact records follow the bad one, the bad one is damage in the middle
// of the file (a flipped bit, a lost sector, an outside hand), and cutting
// there loses the records behind it, acknowledged ones among them. Recovery
// still cuts (nothing after a hole may be applied), but first it keeps the
// bytes it cuts beside the log and says so at ERROR.
#ifndef KVINDEXER_DURABLE_WAL_DAMAGE_H_
#define KVINDEXER_DURABLE_WAL_DAMAGE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "durable/file_io.h"

namespace kvindexer::durable {

// Frames that must follow a candidate record, each fitting in the bytes
// left, before its checksum is computed (fewer when they end exactly at the
// end of the bytes). A cheap filter: without it, checking every offset of
// a large tail would compute checksums over most of it again and again.
inline constexpr int kResyncFrames = 3;

struct IntactRecords {
  // Records that pass their checksum, found by trying every offset of the
  // bytes in turn (see kResyncFrames) and following each run of intact
  // records to its end.
  uint64_t records = 0;
  // Where the first of them starts in the bytes examined; 0 when none.
  uint64_t first_offset = 0;
  // The search gave up before the end (its checksum work exceeded four
  // times the bytes, and at least 64 MiB): records may follow unseen.
  bool incomplete = false;
  // Damage rather than a torn tail: records follow, or may.
  bool any() const { return records > 0 || incomplete; }
};

// The intact records in `bytes`, the file's bytes after the first byte of
// a bad record (or after a bad file header). Reads nothing else.
IntactRecords FindIntactRecords(std::string_view bytes);

// Keeps `bytes`, which recovery is about to cut from the log file `path`
// at `offset`, in <path>.corrupt-<offset> (with .1, .2, ... appended when
// that name exists: earlier evidence is never overwritten). The copy is
// written under a .tmp name, synced, renamed and the directory synced
// before this returns, so that it survives a crash right after the cut.
// Returns the copy's path. INTERNAL naming the file when it cannot be kept;
// the caller must not cut then.
absl::StatusOr<std::string> KeepCutBytes(const std::string& path,
                                         uint64_t offset,
                                         std::string_view bytes, FileIo& io);

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_WAL_DAMAGE_H_
