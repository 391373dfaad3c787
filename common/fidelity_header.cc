#include "common/fidelity_header.h"

namespace kvindexer {
namespace {

constexpr std::string_view kExactWord = "exact";
constexpr std::string_view kDegradedWord = "degraded";

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

bool IsControl(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

FidelityHeader Malformed(std::string_view value) {
  FidelityHeader h;
  h.kind = FidelityHeader::Kind::kMalformed;
  h.value = std::string(value.substr(0, FidelityHeader::kMaxKeptValueBytes));
  return h;
}

}  // namespace

FidelityHeader FidelityHeader::Parse(std::string_view value) {
  const std::string_view v = Trim(value);
  FidelityHeader h;
  h.kind = Kind::kValid;
  if (v == kExactWord) {
    h.fidelity = Fidelity::kExact;
    return h;
  }
  if (v.substr(0, kDegradedWord.size()) != kDegradedWord) {
    return Malformed(value);
  }
  std::string_view rest = v.substr(kDegradedWord.size());
  if (!rest.empty()) {
    // "degraded" must end the value or be followed by ';'.
    if (rest.front() != ';') return Malformed(value);
    rest = Trim(rest.substr(1));
  }
  for (const char c : rest) {
    if (IsControl(c)) return Malformed(value);
  }
  h.fidelity = Fidelity::kDegraded;
  h.reason = std::string(rest.substr(0, kMaxReasonBytes));
  return h;
}

}  // namespace kvindexer
