// Reading configuration from the environment, with one style of error for
// every program: InvalidArgument whose message names the variable, quotes
// the value and says what is accepted, as in
//
//   KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT="0" is invalid: expected a positive
//   integer (1..4294967295), for example 32
//
// Values are quoted with C escapes for bytes that are not printable ASCII, so
// invalid UTF-8 stays readable ("6\xff").
//
// Thread safety: the functions here are thread-safe. A lookup returned by
// ProcessEnvironment() must not race with setenv/putenv.
#ifndef KVINDEXER_COMMON_ENV_H_
#define KVINDEXER_COMMON_ENV_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kvindexer {

// Returns the value of the variable `name`, or nullopt when it is unset. A
// variable that is set but empty yields "".
using EnvLookup = std::function<std::optional<std::string>(std::string_view)>;

// The process environment (getenv).
EnvLookup ProcessEnvironment();

// Exactly the variables in `vars`; for tests and for tools that build an
// environment themselves.
EnvLookup MapEnvironment(std::map<std::string, std::string, std::less<>> vars);

// Reads `name` with surrounding ASCII whitespace removed. Unset and blank
// (empty or whitespace only) both yield nullopt.
std::optional<std::string> LookupTrimmed(const EnvLookup& env,
                                         std::string_view name);

// `value` in double quotes, with C escapes for '"', '\\', and every byte
// that is not printable ASCII.
std::string QuoteEnvValue(std::string_view value);

// InvalidArgument: NAME="value" is invalid: expected ACCEPTED
absl::Status InvalidEnvValue(std::string_view name, std::string_view value,
                             std::string_view accepted);

// InvalidArgument: NAME="value" is invalid: REASON; expected ACCEPTED
// For when what is wrong is not obvious from the value alone (an unknown item
// in a list, a value that conflicts with another variable).
absl::Status InvalidEnvValueBecause(std::string_view name,
                                    std::string_view value,
                                    std::string_view reason,
                                    std::string_view accepted);

// RFC 3629 UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool IsValidUtf8(std::string_view value);

// The grammar of ParseEnvUint32: ASCII decimal digits, optionally after one
// '+' when allow_plus_sign; no whitespace, no '-', no base prefix. The number
// must lie in [min, max].
struct Uint32Syntax {
  uint32_t min = 0;
  uint32_t max = std::numeric_limits<uint32_t>::max();
  bool allow_plus_sign = false;
};

// Parses the value of `name` by `syntax`. Any failure is
// InvalidEnvValue(name, value, accepted); a value that is not valid UTF-8
// says so as the reason.
[[nodiscard]] absl::StatusOr<uint32_t> ParseEnvUint32(
    std::string_view name, std::string_view value, const Uint32Syntax& syntax,
    std::string_view accepted);

// An optional uint32 variable: unset or blank leaves *out (the default) as
// it is; otherwise ParseEnvUint32's value or error. REQUIRES: out != nullptr.
[[nodiscard]] absl::Status ReadEnvUint32(const EnvLookup& env,
                                         std::string_view name,
                                         const Uint32Syntax& syntax,
                                         std::string_view accepted,
                                         uint32_t* out);

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_ENV_H_
