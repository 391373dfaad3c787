// Fetches a worker's /server_info for discovery (docs/bridge-events.md,
// "Many streams in one process > Discovery") and reads its `kv_events`.
//
// Thread safety: a free function; concurrent calls share nothing.
#ifndef KVINDEXER_BRIDGE_SERVER_INFO_CLIENT_H_
#define KVINDEXER_BRIDGE_SERVER_INFO_CLIENT_H_

#include <chrono>
#include <cstddef>

#include "absl/status/statusor.h"
#include "bridge/kv_events_descriptor.h"

namespace kvindexer::bridge {

inline constexpr std::chrono::milliseconds kServerInfoTimeout{2000};
// Larger answers are abandoned as unreadable.
inline constexpr size_t kMaxServerInfoBytes = 4 << 20;

// GETs ServerInfoPath(url) within `timeout` (connecting and reading
// together) and parses the answer. UNAVAILABLE when the worker gives no
// usable answer in time (unreachable, timed out, HTTP 5xx, too large):
// transient, try again later. FailedPrecondition when it answers with
// another non-2xx status or ParseKvEventsDescriptor refuses the body: park.
// HTTPS checks the worker's certificate against the system's CAs.
[[nodiscard]] absl::StatusOr<KvEventsDescriptor> FetchKvEventsDescriptor(
    const WorkerUrl& url,
    std::chrono::milliseconds timeout = kServerInfoTimeout);

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_SERVER_INFO_CLIENT_H_
