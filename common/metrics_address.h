// MetricsAddress: where a process serves its metrics and probes, parsed from
// a "host:port" variable (KV_INDEXER_METRICS_ADDR for the server,
// KV_INDEXER_BRIDGE_METRICS_ADDR for the bridge; docs/metrics.md).
//
// Accepted: an IPv4 literal ("127.0.0.1:9464"), a bracketed IPv6 literal
// ("[::1]:9464") or "localhost", and a port 0..65535 (0 lets the kernel
// pick a free port; the process logs the port it bound).
#ifndef KVINDEXER_COMMON_METRICS_ADDRESS_H_
#define KVINDEXER_COMMON_METRICS_ADDRESS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kvindexer {

struct MetricsAddress {
  std::string host;  // as the socket layer takes it: no brackets
  uint16_t port = 0;

  // "1.2.3.4:5" or "[::1]:5".
  std::string ToString() const;
};

// Errors are InvalidArgument naming `variable`, quoting `value` and saying
// what is accepted.
[[nodiscard]] absl::StatusOr<MetricsAddress> ParseMetricsAddress(
    std::string_view variable, std::string_view value);

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_METRICS_ADDRESS_H_
