// MetricsHttpLimits: the bounds the metrics endpoint keeps on its clients
// (docs/metrics.md, "Limits"). The endpoint is plain HTTP without
// authentication, so any peer that reaches it is a client: these bounds keep
// what such a peer can take (memory, file descriptors, the threads that
// answer probes) small and fixed. The defaults are what kv-indexer-server
// and kv-indexer-bridge use; tests shrink them.
#ifndef KVINDEXER_COMMON_METRICS_HTTP_LIMITS_H_
#define KVINDEXER_COMMON_METRICS_HTTP_LIMITS_H_

#include <algorithm>
#include <chrono>
#include <cstddef>

namespace kvindexer {

struct MetricsHttpLimits {
  // Client connections open at once, in every state. When a new connection
  // would pass the cap, the connection that has waited longest for its
  // request is closed to make room; when no connection is waiting (all are
  // being answered), the new one is closed.
  size_t max_connections = 64;
  // The request line and the headers, the blank line that ends them
  // included. A longer head is answered 431 and the connection closed.
  size_t max_head_bytes = 8192;
  // From accepting a connection, or from finishing the previous response on
  // it, until its next request has arrived whole. A connection that misses
  // it is closed (after a 408 when part of a request had arrived).
  std::chrono::milliseconds request_timeout{5000};
  // After a response, a connection on which no byte of a next request
  // arrives within this is closed. The responses announce it in their
  // Keep-Alive header, in whole seconds (at least 1).
  std::chrono::milliseconds keep_alive_timeout{2000};
  // Requests answered on one connection; the last response says
  // "Connection: close".
  size_t max_requests_per_connection = 5;
  // Writing one response other than a probe's. Probe responses never wait:
  // a probe client whose socket cannot take the answer at once is closed.
  std::chrono::milliseconds write_timeout{5000};
  // Complete requests other than probes waiting while another is answered.
  // One more is answered 503 and its connection closed.
  size_t max_waiting_scrapes = 4;
};

// When a connection that waits for a request must be closed: the request
// deadline counted from `waiting_since` (its accept, or the end of its
// previous response), or the keep-alive timeout while a kept-alive
// connection (`kept_alive`: it has had a response) has received nothing,
// whichever comes first.
inline std::chrono::steady_clock::time_point WaitDeadline(
    const MetricsHttpLimits& limits,
    std::chrono::steady_clock::time_point waiting_since, bool kept_alive,
    bool any_bytes_received) {
  std::chrono::steady_clock::duration allowed = limits.request_timeout;
  if (kept_alive && !any_bytes_received) {
    allowed = std::min<std::chrono::steady_clock::duration>(
        allowed, limits.keep_alive_timeout);
  }
  return waiting_since + allowed;
}

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_METRICS_HTTP_LIMITS_H_
