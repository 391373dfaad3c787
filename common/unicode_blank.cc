#include "common/unicode_blank.h"

#include <cstdint>

namespace kvindexer {
namespace {

bool IsWhiteSpace(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// The code point at the start of `s` and its length in bytes; length 0 for
// bytes that do not start a valid sequence (none of which is white space).
uint32_t TakeCodePoint(std::string_view s, size_t* length) {
  const auto byte = [&](size_t i) {
    return static_cast<uint32_t>(static_cast<unsigned char>(s[i]));
  };
  const uint32_t b0 = byte(0);
  size_t n = 0;
  uint32_t c = 0;
  if (b0 < 0x80) {
    n = 1;
    c = b0;
  } else if ((b0 & 0xE0) == 0xC0) {
    n = 2;
    c = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3;
    c = b0 & 0x0F;
  } else {
    // Four-byte sequences hold no white space.
    *length = 0;
    return 0;
  }
  if (s.size() < n) {
    *length = 0;
    return 0;
  }
  for (size_t i = 1; i < n; ++i) {
    if ((byte(i) & 0xC0) != 0x80) {
      *length = 0;
      return 0;
    }
    c = c << 6 | (byte(i) & 0x3F);
  }
  *length = n;
  return c;
}

}  // namespace

bool IsUnicodeBlank(std::string_view utf8) {
  while (!utf8.empty()) {
    size_t length = 0;
    const uint32_t c = TakeCodePoint(utf8, &length);
    if (length == 0 || !IsWhiteSpace(c)) return false;
    utf8.remove_prefix(length);
  }
  return true;
}

}  // namespace kvindexer
