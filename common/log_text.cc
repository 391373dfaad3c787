#include "common/log_text.h"

#include "fmt/format.h"

namespace kvindexer {
namespace {

bool ShownAsIs(unsigned char c) {
  return c >= 0x20 && c <= 0x7e && c != '\\' && c != '"';
}

}  // namespace

std::string LogText(std::string_view text, size_t max_bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  const std::string_view shown = text.substr(0, max_bytes);
  std::string out;
  out.reserve(shown.size());
  for (const char ch : shown) {
    const auto c = static_cast<unsigned char>(ch);
    if (ShownAsIs(c)) {
      out.push_back(ch);
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0x0f]);
    }
  }
  if (shown.size() < text.size()) {
    out += fmt::format("...(+{} bytes)", text.size() - shown.size());
  }
  return out;
}

}  // namespace kvindexer
