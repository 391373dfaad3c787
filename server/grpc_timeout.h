// Parser for the value of the gRPC `grpc-timeout` request header
// (docs/contract.md, "MatchExternalKvPrefix > grpc-timeout values"): one or
// more ASCII digits followed by exactly one unit
// letter out of H (hours), M (minutes), S (seconds), m (milliseconds),
// u (microseconds) and n (nanoseconds).
//
// Like the reference implementation, any digit count is accepted as long as
// the value fits in a uint64 (the wire protocol's 8-digit limit is not
// enforced). Anything unparsable means "no deadline".
#ifndef KVINDEXER_SERVER_GRPC_TIMEOUT_H_
#define KVINDEXER_SERVER_GRPC_TIMEOUT_H_

#include <chrono>
#include <optional>
#include <string_view>

namespace kvindexer {

// Returns the budget, or nullopt when `value` is empty, lacks digits or a
// unit, has an unknown unit or a non-digit, or does not fit in uint64 (as a
// count of its unit, or as seconds after converting H and M).
//
// A parsable budget longer than std::chrono::nanoseconds can hold (about 292
// years) saturates at nanoseconds::max(); no wait ever reaches it.
[[nodiscard]] std::optional<std::chrono::nanoseconds> ParseGrpcTimeout(
    std::string_view value);

// An absent header means no deadline.
[[nodiscard]] std::optional<std::chrono::nanoseconds> ParseGrpcTimeoutHeader(
    std::optional<std::string_view> header);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_GRPC_TIMEOUT_H_
