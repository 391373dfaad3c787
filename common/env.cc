#include "common/env.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/absl_view.h"

namespace kvindexer {
namespace {}  // namespace

EnvLookup ProcessEnvironment() {
  return [](std::string_view name) -> std::optional<std::string> {
    // getenv needs a NUL-terminated name; a name with a NUL is never set.
    const std::string terminated(name);
    if (terminated.find('\0') != std::string::npos) return std::nullopt;
    const char* value = std::getenv(terminated.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

EnvLookup MapEnvironment(std::map<std::string, std::string, std::less<>> vars) {
  return [vars = std::move(vars)](
             std::string_view name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::optional<std::string> LookupTrimmed(const EnvLookup& env,
                                         std::string_view name) {
  std::optional<std::string> raw = env(name);
  if (!raw) return std::nullopt;
  const absl::string_view trimmed = absl::StripAsciiWhitespace(*raw);
  if (trimmed.empty()) return std::nullopt;
  return std::string(trimmed);
}

std::string QuoteEnvValue(std::string_view value) {
  return absl::StrCat("\"", absl::CHexEscape(AbslView(value)), "\"");
}

absl::Status InvalidEnvValue(std::string_view name, std::string_view value,
                             std::string_view accepted) {
  return absl::InvalidArgumentError(
      absl::StrCat(AbslView(name), "=", QuoteEnvValue(value),
                   " is invalid: expected ", AbslView(accepted)));
}

absl::Status InvalidEnvValueBecause(std::string_view name,
                                    std::string_view value,
                                    std::string_view reason,
                                    std::string_view accepted) {
  return absl::InvalidArgumentError(absl::StrCat(
      AbslView(name), "=", QuoteEnvValue(value),
      " is invalid: ", AbslView(reason), "; expected ", AbslView(accepted)));
}

bool IsValidUtf8(std::string_view value) {
  size_t i = 0;
  while (i < value.size()) {
    const auto c = static_cast<unsigned char>(value[i]);
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > value.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(value[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
        (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += len;
  }
  return true;
}

absl::StatusOr<uint32_t> ParseEnvUint32(std::string_view name,
                                        std::string_view value,
                                        const Uint32Syntax& syntax,
                                        std::string_view accepted) {
  if (!IsValidUtf8(value)) {
    return InvalidEnvValueBecause(name, value, "the value is not valid UTF-8",
                                  accepted);
  }
  std::string_view digits = value;
  if (syntax.allow_plus_sign && !digits.empty() && digits.front() == '+') {
    digits.remove_prefix(1);
  }
  if (digits.empty()) return InvalidEnvValue(name, value, accepted);
  uint64_t n = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return InvalidEnvValue(name, value, accepted);
    n = n * 10 + static_cast<uint64_t>(c - '0');
    if (n > syntax.max) return InvalidEnvValue(name, value, accepted);
  }
  if (n < syntax.min) return InvalidEnvValue(name, value, accepted);
  return static_cast<uint32_t>(n);
}

absl::Status ReadEnvUint32(const EnvLookup& env, std::string_view name,
                           const Uint32Syntax& syntax,
                           std::string_view accepted, uint32_t* out) {
  std::optional<std::string> value = LookupTrimmed(env, name);
  if (!value.has_value()) return absl::OkStatus();
  absl::StatusOr<uint32_t> parsed =
      ParseEnvUint32(name, *value, syntax, accepted);
  if (!parsed.ok()) return parsed.status();
  *out = *parsed;
  return absl::OkStatus();
}

}  // namespace kvindexer
