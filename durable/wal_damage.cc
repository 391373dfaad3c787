#include "durable/wal_damage.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "durable/posix_file.h"
#include "durable/record_framing.h"

namespace kvindexer::durable {
namespace {

constexpr uint64_t kMinSearchBudget = uint64_t{64} << 20;

uint32_t LengthAt(std::string_view bytes, size_t at) {
  uint32_t value = 0;
  for (int i = 3; i >= 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[at + i]);
  }
  return value;
}

// True when kResyncFrames frames, each with a possible length that fits in
// the bytes left, start at `at` one after the other, or when fewer do and
// the last ends exactly at the end of `bytes`.
bool FramesChain(std::string_view bytes, size_t at) {
  size_t x = at;
  for (int frames = 0; frames < kResyncFrames; ++frames) {
    if (x == bytes.size()) return frames > 0;
    if (bytes.size() - x < kRecordHeaderBytes) return false;
    const uint32_t length = LengthAt(bytes, x);
    if (length == 0 || length > kMaxRecordBytes ||
        length > bytes.size() - x - kRecordHeaderBytes) {
      return false;
    }
    x += kRecordHeaderBytes + length;
  }
  return true;
}

}  // namespace

IntactRecords FindIntactRecords(std::string_view bytes) {
  IntactRecords found;
  const uint64_t budget =
      std::max<uint64_t>(kMinSearchBudget, uint64_t{4} * bytes.size());
  uint64_t spent = 0;
  size_t at = 0;
  while (bytes.size() - at > kRecordHeaderBytes) {
    if (!FramesChain(bytes, at)) {
      ++at;
      continue;
    }
    spent += LengthAt(bytes, at);
    if (spent > budget) {
      found.incomplete = true;
      break;
    }
    RecordRead read = ReadRecord(bytes.substr(at));
    if (read.outcome != RecordRead::Outcome::kOk) {
      ++at;
      continue;
    }
    if (found.records == 0) found.first_offset = at;
    // The run of intact records from here; each byte is checked once.
    while (read.outcome == RecordRead::Outcome::kOk) {
      ++found.records;
      at += read.size;
      read = ReadRecord(bytes.substr(at));
    }
    if (read.outcome == RecordRead::Outcome::kEnd) break;
    ++at;  // past the first byte of the next bad record
  }
  return found;
}

absl::StatusOr<std::string> KeepCutBytes(const std::string& path,
                                         uint64_t offset,
                                         std::string_view bytes, FileIo& io) {
  const std::string base = absl::StrCat(path, ".corrupt-", offset);
  std::string copy = base;
  for (int n = 1; ::access(copy.c_str(), F_OK) == 0; ++n) {
    copy = absl::StrCat(base, ".", n);
  }
  if (absl::Status s = ReplaceFileDurably(io, copy, bytes); !s.ok()) {
    return absl::InternalError(
        absl::StrCat("wal: cannot keep the ", bytes.size(), " bytes cut from ",
                     path, " at offset ", offset, " in ", copy, ": ",
                     s.message(), "; nothing was cut"));
  }
  return copy;
}

}  // namespace kvindexer::durable
