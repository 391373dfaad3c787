#include "tests/e2e/durability_files.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace kvindexer::e2e {
namespace {

constexpr size_t kHeaderBytes = 28;
constexpr size_t kVersionOffset = 8;
constexpr size_t kHeaderCrcOffset = 24;
constexpr int kGenerationDigits = 16;

// The generation of `name` when it is <prefix><16 digits><suffix>.
bool Generation(absl::string_view name, absl::string_view prefix,
                absl::string_view suffix, uint64_t* generation) {
  if (!absl::ConsumePrefix(&name, prefix) ||
      !absl::ConsumeSuffix(&name, suffix) || name.size() != kGenerationDigits) {
    return false;
  }
  return absl::SimpleAtoi(name, generation);
}

void PutLe32(uint32_t value, std::string* bytes, size_t at) {
  for (int i = 0; i < 4; ++i) {
    (*bytes)[at + static_cast<size_t>(i)] =
        static_cast<char>((value >> (8 * i)) & 0xff);
  }
}

}  // namespace

absl::StatusOr<DataDirFiles> ListDataDir(const std::string& dir) {
  DataDirFiles files;
  std::error_code error;
  if (!std::filesystem::exists(dir, error)) return files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    // The server renames and deletes files while we list: one that went
    // between the listing and its stat is skipped, not an error.
    std::error_code gone;
    if (entry.is_regular_file(gone)) {
      const uintmax_t size = entry.file_size(gone);
      if (gone) continue;
      files.bytes += size;
    } else if (gone) {
      continue;
    }
    uint64_t generation = 0;
    if (Generation(name, "checkpoint-", ".ckpt", &generation)) {
      files.checkpoints.push_back(generation);
    } else if (Generation(name, "wal-", ".log", &generation)) {
      files.wals.push_back(generation);
    } else {
      if (absl::StartsWith(name, "checkpoint-") &&
          absl::EndsWith(name, ".tmp")) {
        files.writing_checkpoint = true;
      }
      files.others.push_back(name);
    }
  }
  if (error) {
    return absl::InternalError(
        absl::StrCat("listing ", dir, ": ", error.message()));
  }
  std::sort(files.checkpoints.begin(), files.checkpoints.end());
  std::sort(files.wals.begin(), files.wals.end());
  std::sort(files.others.begin(), files.others.end());
  return files;
}

std::string CheckpointPath(const std::string& dir, uint64_t generation) {
  return absl::StrFormat("%s/checkpoint-%016u.ckpt", dir, generation);
}

std::string WalPath(const std::string& dir, uint64_t generation) {
  return absl::StrFormat("%s/wal-%016u.log", dir, generation);
}

uint32_t ReferenceCrc32c(std::string_view data) {
  uint32_t crc = 0xffffffffu;
  for (const char c : data) {
    crc ^= static_cast<uint8_t>(c);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 1u) != 0 ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
    }
  }
  return ~crc;
}

absl::Status SetHeaderVersion(const std::string& path, uint32_t version) {
  absl::StatusOr<std::string> bytes = ReadWholeFile(path);
  if (!bytes.ok()) return bytes.status();
  if (bytes->size() < kHeaderBytes) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is ", bytes->size(), " bytes, shorter than a ",
                     kHeaderBytes, "-byte header"));
  }
  PutLe32(version, &*bytes, kVersionOffset);
  PutLe32(ReferenceCrc32c(std::string_view(bytes->data(), kHeaderCrcOffset)),
          &*bytes, kHeaderCrcOffset);
  return WriteWholeFile(path, *bytes);
}

absl::Status FlipMiddleByte(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadWholeFile(path);
  if (!bytes.ok()) return bytes.status();
  if (bytes->size() <= kHeaderBytes * 2) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is only ", bytes->size(), " bytes"));
  }
  char& middle = (*bytes)[bytes->size() / 2];
  middle = static_cast<char>(~static_cast<unsigned char>(middle));
  return WriteWholeFile(path, *bytes);
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

absl::Status WriteWholeFile(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace kvindexer::e2e
