#include "common/uuid.h"

#include <random>

namespace kvindexer {

std::string FormatUuid(const UuidBytes& bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[bytes[i] >> 4]);
    out.push_back(kHex[bytes[i] & 0x0f]);
  }
  return out;
}

bool IsUuidText(std::string_view text) {
  if (text.size() != 36) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool hyphen = i == 8 || i == 13 || i == 18 || i == 23;
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    if (hyphen ? c != '-' : !hex) return false;
  }
  return true;
}

std::string NewRandomUuid() {
  thread_local std::mt19937_64 generator = [] {
    std::random_device device;
    std::seed_seq seed{device(), device(), device(), device(),
                       device(), device(), device(), device()};
    return std::mt19937_64(seed);
  }();
  UuidBytes bytes;
  for (size_t half = 0; half < 2; ++half) {
    uint64_t bits = generator();
    for (size_t i = 0; i < 8; ++i) {
      bytes[half * 8 + i] = static_cast<uint8_t>(bits >> (8 * i));
    }
  }
  bytes[6] = static_cast<uint8_t>((bytes[6] & 0x0f) | 0x40);  // version 4
  bytes[8] = static_cast<uint8_t>((bytes[8] & 0x3f) | 0x80);  // variant 10
  return FormatUuid(bytes);
}

}  // namespace kvindexer
