#include "server/grpc_timeout.h"

#include <cstdint>
#include <limits>

namespace kvindexer {
namespace {

// Multiplies without overflow; false when the product exceeds uint64.
bool CheckedMul(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

bool CheckedAdd(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

// seconds * 1e9 + nanos, saturating at nanoseconds::max().
std::chrono::nanoseconds Saturate(uint64_t seconds, uint64_t nanos) {
  constexpr uint64_t kMax =
      static_cast<uint64_t>(std::chrono::nanoseconds::max().count());
  uint64_t total = 0;
  if (!CheckedMul(seconds, 1'000'000'000, &total) ||
      !CheckedAdd(total, nanos, &total) || total > kMax) {
    return std::chrono::nanoseconds::max();
  }
  return std::chrono::nanoseconds(static_cast<int64_t>(total));
}

}  // namespace

std::optional<std::chrono::nanoseconds> ParseGrpcTimeout(
    std::string_view value) {
  if (value.size() < 2) return std::nullopt;  // needs a digit and a unit
  const char unit = value.back();
  uint64_t count = 0;
  for (const char c : value.substr(0, value.size() - 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    if (!CheckedMul(count, 10, &count) ||
        !CheckedAdd(count, static_cast<uint64_t>(c - '0'), &count)) {
      return std::nullopt;
    }
  }

  uint64_t seconds = 0;
  switch (unit) {
    case 'H':
      if (!CheckedMul(count, 3600, &seconds)) return std::nullopt;
      return Saturate(seconds, 0);
    case 'M':
      if (!CheckedMul(count, 60, &seconds)) return std::nullopt;
      return Saturate(seconds, 0);
    case 'S':
      return Saturate(count, 0);
    case 'm':
      return Saturate(count / 1'000, (count % 1'000) * 1'000'000);
    case 'u':
      return Saturate(count / 1'000'000, (count % 1'000'000) * 1'000);
    case 'n':
      return Saturate(count / 1'000'000'000, count % 1'000'000'000);
    default:
      return std::nullopt;
  }
}

std::optional<std::chrono::nanoseconds> ParseGrpcTimeoutHeader(
    std::optional<std::string_view> header) {
  if (!header.has_value()) return std::nullopt;
  return ParseGrpcTimeout(*header);
}

}  // namespace kvindexer
