#include "durable/record_framing.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "durable/crc32c.h"

namespace kvindexer::durable {
namespace {

constexpr std::string_view kWalMagic = "KVIXWAL1";
constexpr std::string_view kCheckpointMagic = "KVIXCKP1";
constexpr std::string_view kTrailerMagic = "KVIXEND1";
// Magic, version, reserved and generation: the bytes the header CRC covers.
constexpr size_t kHeaderCoveredBytes = 24;

std::string_view MagicOf(FileKind kind) {
  return kind == FileKind::kWal ? kWalMagic : kCheckpointMagic;
}

const char* KindName(FileKind kind) {
  return kind == FileKind::kWal ? "log" : "checkpoint";
}

void PutFixed32(uint32_t value, std::string* out) {
  for (int i = 0; i < 4; ++i) {
    out->push_back(static_cast<char>((value >> (8 * i)) & 0xFFu));
  }
}

void PutFixed64(uint64_t value, std::string* out) {
  for (int i = 0; i < 8; ++i) {
    out->push_back(static_cast<char>((value >> (8 * i)) & 0xFFu));
  }
}

uint32_t GetFixed32(std::string_view bytes) {
  uint32_t value = 0;
  for (int i = 3; i >= 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  }
  return value;
}

uint64_t GetFixed64(std::string_view bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  }
  return value;
}

}  // namespace

std::string EncodeFileHeader(FileKind kind, uint64_t generation) {
  std::string out;
  out.reserve(kFileHeaderBytes);
  out.append(MagicOf(kind));
  PutFixed32(kFormatVersion, &out);
  PutFixed32(0, &out);  // reserved
  PutFixed64(generation, &out);
  PutFixed32(Crc32c(out), &out);
  return out;
}

absl::StatusOr<FileHeader> DecodeFileHeader(std::string_view bytes,
                                            FileKind kind) {
  if (bytes.size() < kFileHeaderBytes) {
    return absl::DataLossError(
        absl::StrCat("file header cut short: ", bytes.size(), " of ",
                     kFileHeaderBytes, " bytes"));
  }
  const std::string_view magic = MagicOf(kind);
  if (bytes.substr(0, magic.size()) != magic) {
    return absl::DataLossError(
        absl::StrCat("not a ", KindName(kind), " file: bad magic"));
  }
  // The version is checked before the CRC: a newer format may lay out or
  // checksum the rest of its header differently, and such a file must be
  // refused, never mistaken for a corrupt one and repaired.
  const uint32_t version = GetFixed32(bytes.substr(8, 4));
  if (version > kFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(KindName(kind), " file has format version ", version,
                     ", newer than the version ", kFormatVersion,
                     " this binary understands; refusing to touch it"));
  }
  const uint32_t stored_crc = GetFixed32(bytes.substr(kHeaderCoveredBytes, 4));
  if (Crc32c(bytes.substr(0, kHeaderCoveredBytes)) != stored_crc) {
    return absl::DataLossError("file header checksum mismatch");
  }
  if (version == 0) {
    return absl::DataLossError("file header has format version 0");
  }
  FileHeader header;
  header.kind = kind;
  header.version = version;
  header.generation = GetFixed64(bytes.substr(16, 8));
  return header;
}

void AppendRecord(std::string_view payload, std::string* out) {
  PutFixed32(static_cast<uint32_t>(payload.size()), out);
  PutFixed32(Crc32c(payload), out);
  out->append(payload);
}

uint32_t RecordPayloadLength(std::string_view bytes) {
  return GetFixed32(bytes.substr(0, 4));
}

RecordRead ReadRecord(std::string_view bytes) {
  RecordRead read;
  if (bytes.empty()) {
    read.outcome = RecordRead::Outcome::kEnd;
    return read;
  }
  if (bytes.size() < kRecordHeaderBytes) {
    read.outcome = RecordRead::Outcome::kIncomplete;
    return read;
  }
  const uint32_t length = GetFixed32(bytes.substr(0, 4));
  // Zero is impossible too: every payload is non-empty, and a run of zero
  // bytes (a file extended but never written before a crash) must not read
  // as empty records whose CRC, 0, matches.
  if (length == 0 || length > kMaxRecordBytes) {
    read.outcome = RecordRead::Outcome::kBadLength;
    return read;
  }
  if (bytes.size() - kRecordHeaderBytes < length) {
    read.outcome = RecordRead::Outcome::kIncomplete;
    return read;
  }
  const std::string_view payload = bytes.substr(kRecordHeaderBytes, length);
  if (Crc32c(payload) != GetFixed32(bytes.substr(4, 4))) {
    read.outcome = RecordRead::Outcome::kBadChecksum;
    return read;
  }
  read.outcome = RecordRead::Outcome::kOk;
  read.payload = payload;
  read.size = kRecordHeaderBytes + length;
  return read;
}

std::string_view DescribeOutcome(RecordRead::Outcome outcome) {
  switch (outcome) {
    case RecordRead::Outcome::kOk:
      return "intact record";
    case RecordRead::Outcome::kEnd:
      return "end of file";
    case RecordRead::Outcome::kIncomplete:
      return "record cut short";
    case RecordRead::Outcome::kBadLength:
      return "impossible record length";
    case RecordRead::Outcome::kBadChecksum:
      return "record checksum mismatch";
  }
  return "unknown record outcome";
}

std::string EncodeCheckpointTrailer(uint64_t records) {
  std::string out(kTrailerMagic);
  PutFixed64(records, &out);
  return out;
}

std::optional<uint64_t> DecodeCheckpointTrailer(std::string_view payload) {
  if (payload.size() != kTrailerMagic.size() + 8 ||
      payload.substr(0, kTrailerMagic.size()) != kTrailerMagic) {
    return std::nullopt;
  }
  return GetFixed64(payload.substr(kTrailerMagic.size()));
}

}  // namespace kvindexer::durable
