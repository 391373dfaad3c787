// Discovery of a stream's event endpoint from its worker
// (docs/bridge-events.md, "Many streams in one process > Discovery"): the
// `kv_events` object of SGLang's /server_info answer, and what an entry of
// KV_INDEXER_WORKERS_JSON with "discover": true makes of it. Nothing here
// does I/O; the fetch is in server_info_client.h.
//
// Thread safety: pure functions.
#ifndef KVINDEXER_BRIDGE_KV_EVENTS_DESCRIPTOR_H_
#define KVINDEXER_BRIDGE_KV_EVENTS_DESCRIPTOR_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "bridge/workers_json.h"

namespace kvindexer::bridge {

// The worker URL (`worker_address`) taken apart for discovery.
struct WorkerUrl {
  bool https = false;
  std::string host;         // a name or an IP literal, IPv6 without brackets
  uint16_t port = 0;        // the URL's, or 80 / 443 by scheme
  std::string path_prefix;  // "" or "/base", without a trailing '/'
};

// Accepted: [http:// | https://][user@]host[:port][/path][?query][#frag],
// where host is a name, an IPv4 literal or a bracketed IPv6 literal; no
// scheme means http. Anything else (another scheme, no host, a bare IPv6
// literal, a port outside 1..65535) is InvalidArgument saying which.
[[nodiscard]] absl::StatusOr<WorkerUrl> ParseWorkerUrl(
    std::string_view address);

// The path to GET: the URL's path prefix followed by /server_info.
std::string ServerInfoPath(const WorkerUrl& url);

// SGLang's descriptor of its KV-event publisher, as advertised.
struct KvEventsDescriptor {
  std::string publisher;            // "zmq" is the only one followed
  std::string endpoint_host;        // may be a wildcard: *, 0.0.0.0, ::
  uint32_t endpoint_port_base = 0;  // rank r publishes on base + r
  std::string topic;                // "" subscribes to everything
  uint32_t block_size = 0;          // tokens per block of the events
  uint32_t dp_size = 0;             // ranks, hence publishers
};

// Reads `kv_events` from a /server_info body. FailedPrecondition (the
// stream is then parked) when the body is not a JSON object, `kv_events`
// is missing or null, or one of its fields is missing or of the wrong type
// (`topic` may be missing or null: no topic). Unknown fields are ignored.
[[nodiscard]] absl::StatusOr<KvEventsDescriptor> ParseKvEventsDescriptor(
    std::string_view server_info_body);

// The entry as followed: `entry` with its event endpoint
// (tcp://<host>:<endpoint_port_base + dp_rank>, a wildcard host replaced
// by `worker_host`; an entry's own event_endpoint is kept), the advertised
// topic, and, when the entry named no page_size, the advertised
// block_size. FailedPrecondition naming both values when the publisher is
// not "zmq", dp_rank >= dp_size, the block size differs from the entry's
// page_size, or the rank's port is above 65535.
[[nodiscard]] absl::StatusOr<WorkerEntry> ApplyKvEventsDescriptor(
    const WorkerEntry& entry, const KvEventsDescriptor& descriptor,
    std::string_view worker_host);

// Whether `host` is a ZMQ bind wildcard (*, 0.0.0.0, ::, [::], or empty).
bool IsWildcardHost(std::string_view host);

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_KV_EVENTS_DESCRIPTOR_H_
