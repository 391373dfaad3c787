// Block hashes as the operator types them for `kv-indexer-ctl explain`
// (docs/cli.md, "explain"). The wire type is sfixed64, but logs and tools
// print the same 64 bits signed, unsigned or in hex, so all three parse.
#ifndef KVINDEXER_CTL_HASH_LIST_H_
#define KVINDEXER_CTL_HASH_LIST_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kvindexer::ctl {

// One hash: a signed decimal (-9223372036854775808..9223372036854775807), an
// unsigned decimal up to 18446744073709551615 (taken as the same 64 bits), or
// 0x followed by 1 to 16 hex digits. InvalidArgument quoting the text
// otherwise.
[[nodiscard]] absl::StatusOr<int64_t> ParseHash(std::string_view text);

// Appends every hash in `text`, separated by commas and/or whitespace, to
// `out`. Empty items (",,") are skipped. `origin` names where the text came
// from in error messages ("argument 2", "stdin", a file name).
[[nodiscard]] absl::Status AppendHashes(std::string_view text,
                                        std::string_view origin,
                                        std::vector<int64_t>* out);

}  // namespace kvindexer::ctl

#endif  // KVINDEXER_CTL_HASH_LIST_H_
