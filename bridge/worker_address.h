// The host:port the bridge's worker probe dials, taken from
// KV_INDEXER_WORKER_ADDRESS (docs/bridge-events.md, "Recovery > Worker
// liveness"). The address is the router-facing URL of the worker, so it may
// carry a scheme and a path; only its host and port matter here.
//
// Thread safety: pure function.
#ifndef KVINDEXER_BRIDGE_WORKER_ADDRESS_H_
#define KVINDEXER_BRIDGE_WORKER_ADDRESS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kvindexer::bridge {

struct WorkerHostPort {
  std::string host;  // a name or an IP literal, IPv6 without brackets
  uint16_t port = 0;
};

// Accepted: [scheme://][user@]host:port[/path][?query][#fragment], where host
// is a name, an IPv4 literal or a bracketed IPv6 literal and port is decimal
// 1..65535; for example http://10.0.0.5:30000, 10.0.0.5:30000,
// [fd00::5]:30000. An empty address, one without a port (http://worker,
// a bare fd00::5) or with an unusable port returns InvalidArgument saying
// which: the probe is then disabled, not an error.
[[nodiscard]] absl::StatusOr<WorkerHostPort> ParseWorkerHostPort(
    std::string_view address);

// Why KV_INDEXER_WORKER_ADDRESS is unlikely to serve a router, in one line
// for a start-up WARN: empty (the index then names the worker by id only,
// and no worker probe can run), or without a scheme (routers address
// workers by URL, e.g. http://10.0.0.5:30000). nullopt when it looks usable.
std::optional<std::string> WorkerAddressWarning(std::string_view address);

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_WORKER_ADDRESS_H_
