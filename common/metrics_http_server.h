// MetricsHttpServer: the small HTTP endpoint a process exposes for
// Prometheus and for its probes (docs/metrics.md):
//   GET /metrics  the registry in the text format (common/prometheus_text.h)
//   GET /healthz  200 "ok" while the process runs
//   GET /readyz   200 "ready", or 503 with a one-line reason while the
//                 process is not ready to serve
// Any other path answers 404.
//
// Bounded against any client that reaches it (MetricsHttpLimits, with the
// defaults in common/metrics_http_limits.h): a connection cap, a cap on a
// request's head, a deadline for each whole request and for idle kept-alive
// connections. No path takes a request body. Three threads:
//   - the listener (common/bounded_http_listener.h) accepts connections and
//     reads every request until it is whole, on one thread that never
//     blocks;
//   - the probe lane answers /healthz and /readyz (GET or HEAD) and never
//     waits on a client: its answers are sent without waiting;
//   - the scrape lane answers everything else, /metrics included, waiting
//     up to `write_timeout` for a slow reader.
// So neither slow senders nor a slow scrape delay a probe. Requests are
// parsed and answered by cpp-httplib (Debian's libcpp-httplib, which stays
// out of this header) through common/http_exchange_stream.h; cpp-httplib
// never touches a socket. The server must not take cores from the work it
// reports on: scrapes and probes are rare and cheap.
//
// When the bound address is not a loopback address (127.0.0.0/8, ::1),
// Start logs a WARN: the endpoint has no TLS and no authentication.
//
// Thread safety: Start and Stop from one owning thread; the handlers run on
// the server's threads, so `not_ready_reason` and the registry's collectors
// must be thread-safe.
#ifndef KVINDEXER_COMMON_METRICS_HTTP_SERVER_H_
#define KVINDEXER_COMMON_METRICS_HTTP_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/metrics_address.h"
#include "common/metrics_http_limits.h"
#include "common/metrics_registry.h"

namespace kvindexer {

class MetricsHttpServer {
 public:
  // nullopt when ready; otherwise why not, in one line.
  using ReadinessCheck = std::function<std::optional<std::string>()>;

  // Binds `address` (port 0: a free port the kernel picks) and starts
  // serving within `limits`. REQUIRES: `registry` outlives the server. An
  // address that cannot be bound is UNAVAILABLE.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const MetricsAddress& address, const MetricsRegistry& registry,
      ReadinessCheck not_ready_reason, const MetricsHttpLimits& limits = {});

  ~MetricsHttpServer();  // Stop()
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // The bound port.
  uint16_t port() const { return port_; }
  // "host:port" as bound, in the form of MetricsAddress::ToString.
  std::string bound_address() const;

  // Stops accepting, closes the connections that wait, lets the answers in
  // progress finish (an answer still waiting for a slow reader is
  // abandoned) and joins the threads. Idempotent.
  void Stop();

 private:
  struct Impl;
  MetricsHttpServer(std::unique_ptr<Impl> impl, MetricsAddress address,
                    uint16_t port);

  std::unique_ptr<Impl> impl_;
  MetricsAddress address_;
  uint16_t port_;
};

// The WARN that Start logs for an endpoint bound to `bound`, a numeric
// address; nullopt when it is a loopback address.
std::optional<std::string> BeyondLoopbackWarning(
    const MetricsAddress& bound, const MetricsHttpLimits& limits);

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_METRICS_HTTP_SERVER_H_
