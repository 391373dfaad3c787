#include "durable/indexer_epoch_file.h"

#include <fstream>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/uuid.h"
#include "durable/posix_file.h"
#include "spdlog/spdlog.h"

namespace kvindexer::durable {
namespace {

constexpr std::string_view kEpochKey = "epoch ";
constexpr std::string_view kBootIdKey = "boot_id ";
// A boot id is a UUID; anything much longer is not one.
constexpr size_t kMaxBootIdBytes = 64;

bool ValidBootId(std::string_view id) {
  if (id.size() > kMaxBootIdBytes) return false;
  for (char c : id) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c)) ||
        !absl::ascii_isprint(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return true;
}

// The parsed file, or why it is not one.
std::optional<EpochFile> Parse(std::string_view text, std::string* why) {
  std::vector<std::string_view> lines;
  for (size_t at = 0;;) {
    const size_t end = text.find('\n', at);
    lines.push_back(text.substr(
        at, end == std::string_view::npos ? std::string_view::npos : end - at));
    if (end == std::string_view::npos) break;
    at = end + 1;
  }
  // The trailing newline leaves one empty piece.
  if (lines.size() != 3 || !lines[2].empty()) {
    *why = "not two lines";
    return std::nullopt;
  }
  if (!lines[0].starts_with(kEpochKey) || !lines[1].starts_with(kBootIdKey)) {
    *why = "not the lines \"epoch ...\" and \"boot_id ...\"";
    return std::nullopt;
  }
  EpochFile file{std::string(lines[0].substr(kEpochKey.size())),
                 std::string(lines[1].substr(kBootIdKey.size()))};
  if (!IsUuidText(file.epoch)) {
    *why = "the epoch is not a lowercase hyphenated UUID";
    return std::nullopt;
  }
  if (!ValidBootId(file.boot_id)) {
    *why = "the boot id is not printable text of at most 64 bytes";
    return std::nullopt;
  }
  return file;
}

}  // namespace

std::optional<EpochFile> ReadEpochFile(const std::string& dir) {
  const std::string path = JoinPath(dir, kEpochFileName);
  std::string text;
  if (absl::Status s = ReadWholeFile(path, &text); !s.ok()) {
    if (s.code() != absl::StatusCode::kNotFound) {
      spdlog::warn("epoch: {}; a new indexer epoch is chosen",
                   std::string(s.message()));
    }
    return std::nullopt;
  }
  std::string why;
  std::optional<EpochFile> file = Parse(text, &why);
  if (!file.has_value()) {
    spdlog::warn(
        "epoch: {} is not an epoch file ({}); a new indexer epoch "
        "is chosen",
        path, why);
  }
  return file;
}

absl::Status WriteEpochFile(const std::string& dir, const EpochFile& file,
                            FileIo& io) {
  const std::string path = JoinPath(dir, kEpochFileName);
  const std::string text = std::string(kEpochKey) + file.epoch + "\n" +
                           std::string(kBootIdKey) + file.boot_id + "\n";
  if (absl::Status s = ReplaceFileDurably(io, path, text); !s.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot write ", path, ": ", s.message()));
  }
  return absl::OkStatus();
}

std::string ReadBootId(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  std::string id(absl::StripAsciiWhitespace(line));
  return ValidBootId(id) ? id : "";
}

}  // namespace kvindexer::durable
