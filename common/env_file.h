// Files named by environment variables: certificates, keys and the write
// token (docs/security.md). The errors follow common/env.h: InvalidArgument
// naming the variable and quoting the path. A token's content never appears
// in a message.
//
// Thread safety: the functions here are thread-safe.
#ifndef KVINDEXER_COMMON_ENV_FILE_H_
#define KVINDEXER_COMMON_ENV_FILE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/env.h"

namespace kvindexer {

// The whole content of the file at `path`, named by `var`. Unreadable (no
// such file, a directory, no permission) and empty files are errors.
[[nodiscard]] absl::StatusOr<std::string> ReadEnvNamedFile(
    std::string_view var, std::string_view path);

// The shortest write token accepted: 16 characters leave a guessing client
// no chance even at the server's full request rate.
inline constexpr size_t kMinWriteTokenBytes = 16;

// The token in the file at `path`, named by `var`, with surrounding ASCII
// whitespace (a trailing newline) removed. It must then have at least
// kMinWriteTokenBytes characters of visible ASCII (0x21..0x7e), so that it
// travels unchanged in an HTTP/2 header as `authorization: Bearer <token>`.
// A file writable by its group or by others is refused: whoever can write it
// chooses the token.
[[nodiscard]] absl::StatusOr<std::string> ReadTokenFile(std::string_view var,
                                                        std::string_view path);

// The trimmed value of `var` when it is set and not blank; nullopt
// otherwise (LookupTrimmed of common/env.h), as a path to read.
std::optional<std::string> LookupPath(const EnvLookup& env,
                                      std::string_view var);

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_ENV_FILE_H_
