// ServerWiring: what every kv-indexer-server has whatever its mode
// (server/server_mode.h): the write token, the KVIndexer service over the
// Indexer, the metrics and their endpoint, the admin service, the gRPC
// server and its health, the liveness sweeper, the status reports to
// routers, and the graceful shutdown.
// RunServer (server/server_runner.h) builds it right after the Indexer and
// hands it to the start function of the configured mode, which loads the
// mode's state and calls Serve.
//
// What must stop before what goes:
//   - the metrics endpoint stops before any state its scrapes read goes (a
//     data directory's store, a replica's follower): Serve stops it before
//     it returns, so a start function's state may go once Serve returned;
//   - the gRPC server is gone, so no call can reach the Indexer, a store or
//     a follower, when Serve returns;
//   - the metrics outlive the service that records into them, and any call
//     its executors still run while it is destroyed (declared before it);
//   - the Indexer's and the mode's callbacks into `health` are dropped
//     before `health` goes (Serve);
//   - the status reporter, which reads the Indexer, `health`, the mode and
//     the service's admission, stops (its final report sent) as soon as
//     shutdown begins, before any of them goes;
//   - the wiring goes before the Indexer, which it borrows.
//
// Thread safety: the main thread calls every method; the metrics endpoint's
// threads run its readiness check.
#ifndef KVINDEXER_SERVER_SERVER_WIRING_H_
#define KVINDEXER_SERVER_SERVER_WIRING_H_

#include <atomic>
#include <memory>

#include "common/clock.h"
#include "common/metrics_http_server.h"
#include "common/metrics_registry.h"
#include "common/shutdown_signals.h"
#include "core/backend_loader.h"
#include "core/indexer.h"
#include "server/admin_service.h"
#include "server/kv_indexer_service.h"
#include "server/read_authorizer.h"
#include "server/server_config.h"
#include "server/server_metrics.h"
#include "server/server_mode.h"
#include "server/serving_health.h"
#include "server/write_authorizer.h"

namespace kvindexer {

class ServerWiring {
 public:
  // Builds the write authorizer and the KVIndexer service (which refuses
  // the mutation RPCs when the server follows the fleet event log), and
  // logs the security summary (with a WARN for an address reachable beyond
  // loopback without protection), the startup line and the request bounds.
  // REQUIRES: every argument outlives the wiring; `indexer` is built over
  // `backend`.
  ServerWiring(const ServerConfig& config, const LoadedBackend& backend,
               Indexer& indexer, const ShutdownSignals& signals);
  ServerWiring(const ServerWiring&) = delete;
  ServerWiring& operator=(const ServerWiring&) = delete;

  // With KV_INDEXER_METRICS_ADDR: registers the metrics and starts their
  // endpoint (docs/metrics.md), before any state loads, so that /metrics,
  // /healthz and /readyz answer meanwhile. False, with the error logged,
  // when it cannot: the server exits 1.
  [[nodiscard]] bool StartMetricsEndpoint();
  // Stops the endpoint; nothing without one, or once stopped.
  void StopMetricsEndpoint();

  const ServerConfig& config() const { return config_; }
  const LoadedBackend& backend() const { return backend_; }
  Indexer& indexer() { return indexer_; }
  // Null without KV_INDEXER_METRICS_ADDR.
  ServerMetrics* metrics() { return metrics_.get(); }
  // A replica's line-A writes go to `writes` (KvIndexerService::
  // WriteThroughLog). REQUIRES: before Serve; `writes` outlives Serve.
  void WriteThroughLog(IndexOperations* writes) {
    service_.WriteThroughLog(writes);
  }

  // What the admin service reads (docs/admin-api.md), but for the mode's
  // part: a data directory's store.
  AdminSources MakeAdminSources();

  // Binds the listen address (server/connection_listener.h: the connection
  // cap), serving the KVIndexer service and the admin service built on
  // `admin` within the memory quota, with `mode` attached, until SIGINT or
  // SIGTERM
  // (without signal handling: until the process is killed); then shuts
  // down gracefully and logs "stopped". With KV_INDEXER_ROUTER_URLS, status
  // reports go to the routers from the moment the address is bound, and a
  // final one when shutdown begins (server/status_reporter.h). Returns the exit
  // code: kExitOk, or kExitFailure when the address cannot be bound (logged).
  // Stops the metrics endpoint before it returns. REQUIRES: called once, after
  // StartMetricsEndpoint succeeded; `mode` and what `admin` points to
  // outlive the call.
  int Serve(AdminSources admin, ServerMode& mode);

 private:
  // Where the server is in its life, for /readyz.
  enum class Phase { kStarting, kServing, kStopping };

  // /readyz's answer: why the server is not ready; nullopt when it is.
  std::optional<std::string> NotReadyReason() const;

  const ServerConfig& config_;
  const LoadedBackend& backend_;
  Indexer& indexer_;
  const ShutdownSignals& signals_;
  // Security (docs/security.md): the write token and the admin read token.
  const WriteAuthorizer write_authorizer_;
  const ReadAuthorizer read_authorizer_;
  // When the server started, on the Indexer's clock (the admin's uptime).
  const MonotonicClock::TimePoint started_at_;
  // The metrics (docs/metrics.md), declared before the service that records
  // into them.
  MetricsRegistry registry_;
  std::unique_ptr<ServerMetrics> metrics_;
  KvIndexerService service_;
  std::atomic<Phase> phase_{Phase::kStarting};
  // The mode once the server serves, for /readyz.
  std::atomic<const ServerMode*> serving_mode_{nullptr};
  // grpc.health.v1 as published, for the admin's GetStats; null until the
  // server listens.
  std::atomic<const ServingHealth*> published_health_{nullptr};
  std::unique_ptr<MetricsHttpServer> metrics_http_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_SERVER_WIRING_H_
