#include "ctl/hash_list.h"

#include <charconv>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/env.h"

namespace kvindexer::ctl {
namespace {

constexpr char kAccepted[] =
    "expected a signed decimal (e.g. -42), an unsigned decimal below 2^64 or "
    "0x followed by 1 to 16 hex digits";

absl::Status BadHash(std::string_view text) {
  return absl::InvalidArgumentError(
      absl::StrCat("bad hash ", QuoteEnvValue(text), ": ", kAccepted));
}

bool IsSeparator(char c) {
  return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

}  // namespace

absl::StatusOr<int64_t> ParseHash(std::string_view text) {
  if (text.empty()) return BadHash(text);
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    if (text.size() > 18) return BadHash(text);
    uint64_t value = 0;
    auto [ptr, ec] = std::from_chars(begin + 2, end, value, 16);
    if (ec != std::errc() || ptr != end) return BadHash(text);
    return static_cast<int64_t>(value);
  }
  if (text[0] == '-') {
    int64_t value = 0;
    auto [ptr, ec] = std::from_chars(begin, end, value, 10);
    if (ec != std::errc() || ptr != end) return BadHash(text);
    return value;
  }
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(begin, end, value, 10);
  if (ec != std::errc() || ptr != end) return BadHash(text);
  return static_cast<int64_t>(value);
}

absl::Status AppendHashes(std::string_view text, std::string_view origin,
                          std::vector<int64_t>* out) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsSeparator(text[i])) ++i;
    size_t j = i;
    while (j < text.size() && !IsSeparator(text[j])) ++j;
    if (j > i) {
      absl::StatusOr<int64_t> hash = ParseHash(text.substr(i, j - i));
      if (!hash.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(std::string(origin), ": ", hash.status().message()));
      }
      out->push_back(*hash);
    }
    i = j;
  }
  return absl::OkStatus();
}

}  // namespace kvindexer::ctl
