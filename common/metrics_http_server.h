// MetricsHttpServer: the small HTTP endpoint a process exposes for
// Prometheus and for its probes (docs/metrics.md):
//   GET /metrics  the registry in the text format (common/prometheus_text.h)
//   GET /healthz  200 "ok" while the process runs
//   GET /readyz   200 "ready", or 503 with a one-line reason while the
//                 process is not ready to serve
// Any other path answers 404.
//
// Built on cpp-httplib (Debian's libcpp-httplib), which stays out of this
// header. It runs a listening thread and a pool of two request threads:
// scrapes and probes are rare and cheap, and the server must not take cores
// from the work it reports on.
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
#include "common/metrics_registry.h"

namespace kvindexer {

class MetricsHttpServer {
 public:
  // nullopt when ready; otherwise why not, in one line.
  using ReadinessCheck = std::function<std::optional<std::string>()>;

  // Binds `address` (port 0: a free port the kernel picks) and starts
  // serving. REQUIRES: `registry` outlives the server. An address that
  // cannot be bound is UNAVAILABLE.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const MetricsAddress& address, const MetricsRegistry& registry,
      ReadinessCheck not_ready_reason);

  ~MetricsHttpServer();  // Stop()
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // The bound port.
  uint16_t port() const { return port_; }
  // "host:port" as bound, in the form of MetricsAddress::ToString.
  std::string bound_address() const;

  // Stops accepting, finishes the requests in progress and joins the
  // threads. Idempotent.
  void Stop();

 private:
  struct Impl;
  MetricsHttpServer(std::unique_ptr<Impl> impl, MetricsAddress address,
                    uint16_t port);

  std::unique_ptr<Impl> impl_;
  MetricsAddress address_;
  uint16_t port_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_METRICS_HTTP_SERVER_H_
