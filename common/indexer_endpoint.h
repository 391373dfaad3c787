// Turns KV_INDEXER_ENDPOINT (a URI such as http://127.0.0.1:50051) into a
// gRPC channel target. An endpoint that cannot be used is not a startup
// error (docs/bridge-events.md, "Configuration > Startup validation"): the
// caller treats the error as a transport
// failure and retries with backoff.
#ifndef KVINDEXER_COMMON_INDEXER_ENDPOINT_H_
#define KVINDEXER_COMMON_INDEXER_ENDPOINT_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kvindexer {

struct GrpcTarget {
  std::string target;  // e.g. "127.0.0.1:50051", "[::1]:50051", "unix:/p"
  bool use_tls = false;
};

// Accepted forms:
//   http://host[:port][/]   -> "host:port" (port defaults to 80), plaintext
//   https://host[:port][/]  -> "host:port" (port defaults to 443), TLS
//   unix:/path, unix:///path, unix://path -> "unix:/path", plaintext
// host may be a name, an IPv4 literal or a bracketed IPv6 literal.
// Anything else returns InvalidArgument explaining the accepted forms.
[[nodiscard]] absl::StatusOr<GrpcTarget> ParseIndexerEndpoint(
    std::string_view endpoint);

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_INDEXER_ENDPOINT_H_
