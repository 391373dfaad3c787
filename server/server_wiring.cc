#include "server/server_wiring.h"

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "core/operator_view.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/server_builder.h"
#include "server/connection_listener.h"
#include "server/descriptor_limit.h"
#include "server/liveness_sweeper.h"
#include "server/security_config.h"
#include "server/server_runner.h"
#include "server/status_inputs_source.h"
#include "server/status_reporter.h"
#include "server/transport_settings.h"
#include "spdlog/spdlog.h"

#ifndef KVINDEXER_VERSION
#define KVINDEXER_VERSION "unknown"
#endif
#ifndef KVINDEXER_BUILD_TYPE
#define KVINDEXER_BUILD_TYPE "unknown"
#endif

namespace kvindexer {
namespace {

#if defined(__clang__)
#define KVINDEXER_COMPILER "clang " __clang_version__
#else
#define KVINDEXER_COMPILER "gcc " __VERSION__
#endif
constexpr std::string_view kServerBuildInfo =
    "compiler " KVINDEXER_COMPILER "; build " KVINDEXER_BUILD_TYPE;

WriteAuthorizer MakeWriteAuthorizer(const SecurityConfig& security) {
  return security.has_write_token() ? WriteAuthorizer(security.write_token)
                                    : WriteAuthorizer();
}

ReadAuthorizer MakeReadAuthorizer(const SecurityConfig& security) {
  return security.has_admin_read_token()
             ? ReadAuthorizer(security.admin_read_token, security.write_token)
             : ReadAuthorizer();
}

// Hands an accepted connection to gRPC (server/connection_listener.h).
ConnectionListener::HandOff HandTo(
    grpc::experimental::ExternalConnectionAcceptor* acceptor) {
  return [acceptor](int listen_fd, int fd) {
    grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters
        connection;
    connection.listener_fd = listen_fd;
    connection.fd = fd;
    acceptor->HandleNewConnection(&connection);
  };
}

}  // namespace

ServerWiring::ServerWiring(const ServerConfig& config,
                           const LoadedBackend& backend, Indexer& indexer,
                           const ShutdownSignals& signals)
    : config_(config),
      backend_(backend),
      indexer_(indexer),
      signals_(signals),
      write_authorizer_(MakeWriteAuthorizer(config.security)),
      read_authorizer_(MakeReadAuthorizer(config.security)),
      started_at_(indexer.operator_view().clock().Now()),
      service_(indexer.operations(), config.prefix_query_max_inflight,
               WallClock::Real(), /*rejection_log=*/nullptr,
               /*read_heartbeats=*/config.liveness, &write_authorizer_,
               config.queues,
               ApplyNiceIncrementFor(backend.read_concurrency())) {
  // Security (docs/security.md): the write token, TLS and the warning for a
  // server reachable beyond loopback without them.
  spdlog::info("{}", SecuritySummary(config.security));
  if (const auto warning =
          BeyondLoopbackWarning(config.listen_addr, config.security)) {
    spdlog::warn("{}", *warning);
  }
  // A replica changes only through the log.
  if (config.event_source.follows_log()) service_.FollowLog();

  const BackendDescriptor& descriptor = backend.descriptor();
  spdlog::info(
      "{} addr={} prefix_query_max_inflight={} max_concurrent_streams={} "
      "backend={} backend_version={} backend_path={} backend_build=\"{}\" "
      "server_version={} server_build=\"{}\"",
      kStartupMessage, config.listen_addr, config.prefix_query_max_inflight,
      kMaxConcurrentStreams, descriptor.name, descriptor.version,
      backend.path(), descriptor.build_info, KVINDEXER_VERSION,
      kServerBuildInfo);

  // The apply thread's priority follows what the backend says of its
  // readers (server/kv_indexer_service.h, kApplyNiceIncrement).
  spdlog::info("apply thread nice_increment={} (backend read_concurrency={})",
               ApplyNiceIncrementFor(backend.read_concurrency()),
               ReadConcurrencyName(backend.read_concurrency()));

  // The work queues and the gRPC runtime's bounds.
  spdlog::info(
      "queue bounds apply_queue_max={} lookup_queue_max={} "
      "admin_queue_max={} grpc_max_connections={} grpc_memory_quota_mib={} "
      "grpc_reflection={}",
      config.queues.apply, config.queues.lookup, config.queues.admin,
      config.grpc.max_connections, config.grpc.memory_quota_mib,
      config.grpc.reflection ? "on" : "off");
  if (const auto warning = EnsureDescriptorsFor(config.grpc.max_connections)) {
    spdlog::warn("{}", *warning);
  }

  // docs/contract.md, "Limits > Bounds".
  spdlog::info(
      "request bounds max_worker_id_bytes={} max_worker_address_bytes={} "
      "max_worker_epoch_bytes={} max_workers={} max_prefix_answer_bytes={}",
      config.limits.max_worker_id_bytes, config.limits.max_worker_address_bytes,
      config.limits.max_worker_epoch_bytes, config.limits.max_workers,
      config.limits.max_prefix_answer_bytes);
}

bool ServerWiring::StartMetricsEndpoint() {
  if (!config_.metrics_addr.has_value()) return true;
  metrics_ = std::make_unique<ServerMetrics>(
      registry_, indexer_.operator_view(), service_,
      config_.metrics_worker_series, &read_authorizer_);
  auto started = MetricsHttpServer::Start(
      *config_.metrics_addr, registry_,
      [this]() -> std::optional<std::string> { return NotReadyReason(); });
  if (!started.ok()) {
    spdlog::error("cannot serve metrics on {}={}: {}", kMetricsAddrVar,
                  config_.metrics_addr->ToString(),
                  std::string(started.status().message()));
    return false;
  }
  metrics_http_ = *std::move(started);
  spdlog::info("metrics http addr={}", metrics_http_->bound_address());
  return true;
}

void ServerWiring::StopMetricsEndpoint() {
  if (metrics_http_ != nullptr) metrics_http_->Stop();
}

std::optional<std::string> ServerWiring::NotReadyReason() const {
  switch (phase_.load()) {
    case Phase::kStarting:
      return "starting: recovering state or binding the gRPC port";
    case Phase::kStopping:
      return "shutting down";
    case Phase::kServing:
      break;
  }
  // As grpc.health.v1 reports NOT_SERVING (docs/health.md).
  if (std::optional<std::string> failure =
          indexer_.operator_view().BackendFailure()) {
    return "backend failed: " + *failure;
  }
  if (const ServerMode* mode = serving_mode_.load()) {
    return mode->NotReadyReason();
  }
  return std::nullopt;
}

AdminSources ServerWiring::MakeAdminSources() {
  const BackendDescriptor& descriptor = backend_.descriptor();
  OperatorView& view = indexer_.operator_view();
  return AdminSources{
      .indexer = &view,
      .backend_name = descriptor.name,
      .backend_version = descriptor.version,
      .backend_path = backend_.path(),
      .backend_abi_major = descriptor.abi_major,
      .backend_abi_minor = backend_.abi_minor(),
      .admission = &service_.admission(),
      .prefix_query_max_inflight = config_.prefix_query_max_inflight,
      .data_dir = config_.durability.data_dir,
      .wal_sync = std::string(WalSyncName(config_.durability.wal_sync)),
      .authorizer = &write_authorizer_,
      .read_authorizer = &read_authorizer_,
      .queue_max = config_.queues.admin,
      .follows_log = config_.event_source.follows_log(),
      .max_worker_id_bytes = config_.limits.max_worker_id_bytes,
      .server_version = KVINDEXER_VERSION,
      .started = started_at_,
      .backend_failure = [&view] { return view.BackendFailure(); },
      .health = [this]() -> std::string {
        const ServingHealth* health = published_health_.load();
        return health == nullptr || health->serving() ? "SERVING"
                                                      : "NOT_SERVING";
      },
      .metrics = metrics_ != nullptr ? metrics_->rpc() : nullptr,
      .queue_rejections =
          metrics_ != nullptr ? metrics_->admin_queue_rejections() : nullptr,
      .explain_rejections =
          metrics_ != nullptr ? metrics_->explain_rejections() : nullptr,
  };
}

int ServerWiring::Serve(AdminSources admin_sources, ServerMode& mode) {
  // Read by /readyz only once the phase says serving.
  serving_mode_.store(&mode);
  // The admin API (docs/admin-api.md), after the state it reports on. Its
  // GetStats reports health as published below, once the server listens.
  AdminService admin(std::move(admin_sources));
  // grpc.health.v1 and reflection (docs/health.md): before the builder.
  EnableHealthAndReflection();
  // The port is bound and accepted here, not by gRPC: the connection cap
  // (server/connection_listener.h).
  auto listener = ConnectionListener::Bind(config_.listen_addr,
                                           config_.grpc.max_connections);
  if (!listener.ok()) {
    spdlog::error(
        "cannot listen on {}={}: {} (the address is in use, not local, or "
        "not permitted)",
        kListenAddrVar, config_.listen_addr,
        std::string(listener.status().message()));
    StopMetricsEndpoint();  // before the mode's state goes
    return kExitFailure;
  }
  grpc::ServerBuilder builder;
  ApplyTransportSettings(builder);
  if (!config_.grpc.reflection) BuildWithoutReflection(builder);
  // The memory quota (server/grpc_server_config.h); outlives the server.
  grpc::ResourceQuota quota("kv-indexer-server");
  if (config_.grpc.memory_quota_mib > 0) {
    quota.Resize(static_cast<size_t>(config_.grpc.memory_quota_mib) << 20);
    builder.SetResourceQuota(quota);
  }
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor =
      builder.experimental().AddExternalConnectionAcceptor(
          grpc::ServerBuilder::experimental_type::ExternalConnectionType::
              FROM_FD,
          MakeServerCredentials(config_.security));
  builder.RegisterService(&service_);
  builder.RegisterService(&admin);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    spdlog::error("cannot start the gRPC server on {}={}", kListenAddrVar,
                  config_.listen_addr);
    StopMetricsEndpoint();  // before the mode's state goes
    return kExitFailure;
  }
  const int bound_port = (*listener)->port();
  (*listener)->Start(HandTo(acceptor.get()));
  if (metrics_ != nullptr) metrics_->SetConnectionListener(listener->get());
  // SERVING from here on, the state being loaded, until the backend fails
  // in a way it cannot continue from, the state log fails, or shutdown
  // begins (docs/health.md); before the line that tells tests we listen.
  ServingHealth health(server->GetHealthCheckService(), HealthServiceNames());
  OperatorView& view = indexer_.operator_view();
  view.SetBackendFailureCallback(
      [&health](const std::string& failure) { health.BackendFailed(failure); });
  mode.Attach(health);
  health.Listening();
  published_health_.store(&health);
  spdlog::info("listening addr={}",
               BoundAddress(config_.listen_addr, bound_port));
  phase_ = Phase::kServing;
  mode.Start();

  // Status reports to routers (docs/fleet.md, "Status reports to
  // routers"), once the address is bound; the final one goes out as soon
  // as shutdown begins.
  std::unique_ptr<StatusReporter> reporter;
  if (config_.status_reporter.enabled()) {
    reporter = std::make_unique<StatusReporter>(StatusReporterOptions{
        .config = config_.status_reporter,
        .source = MakeStatusInputsSource(StatusInputsParts{
            .indexer = &view,
            .serving = [&health] { return health.serving(); },
            .caught_up = [&mode] { return mode.CaughtUpWithLog(); },
            .admission = &service_.admission(),
            .permits_capacity = config_.prefix_query_max_inflight,
        }),
        .registry = &registry_,
        .clock = &MonotonicClock::Real(),
    });
  }

  // Worker liveness (docs/contract.md, "Recovery > Worker liveness and
  // removal").
  std::unique_ptr<LivenessSweeper> sweeper;
  if (config_.liveness) {
    spdlog::info("worker liveness on sweep_ms={}", config_.liveness_sweep_ms);
    sweeper = std::make_unique<LivenessSweeper>(
        std::chrono::milliseconds(config_.liveness_sweep_ms), [&view, &mode] {
          if (!mode.MaySweep(view.clock().Now())) return;
          // A failure is logged by the Indexer and retried next sweep.
          view.SweepLiveness(view.clock().Now());
          // Idle staged snapshots free their reservations even when no
          // staging call comes.
          view.ExpireIdleStaging();
        });
  } else {
    spdlog::info("worker liveness off: heartbeats are ignored ({}=0)",
                 kLivenessVar);
  }

  // A second signal during the grace period ends the process at once; the
  // data directory is then recovered as after a crash (docs/operations.md).
  std::optional<ShutdownSignalWatcher> second_signal;
  if (const std::optional<int> signal_number = signals_.Wait()) {
    spdlog::info("received {}; shutting down (grace period {} s)",
                 SignalName(*signal_number), kShutdownGrace.count());
    const auto exit_at_once = [](int again) {
      spdlog::warn("received {} during shutdown; exiting at once",
                   SignalName(again));
      spdlog::shutdown();
      std::_Exit(kExitFailure);
    };
    // One that came with the first (both pending) is taken here, so that
    // it cannot slip past a watcher that is not running yet.
    if (const std::optional<int> again = signals_.TakePending()) {
      exit_at_once(*again);
    }
    second_signal.emplace(signals_, exit_at_once);
  } else {
    // No signal handling: serve until the process is killed.
    server->Wait();
  }
  // The routers hear that this indexer goes, before the grace period.
  if (reporter != nullptr) reporter->Stop();
  // Probes see NOT_SERVING while running calls finish (docs/health.md).
  health.ShuttingDown();
  // A write waiting at the replay cap for a checkpoint would hold the
  // apply thread through the grace period.
  mode.Draining();
  phase_ = Phase::kStopping;
  // No new connection once shutdown begins; those open finish their calls.
  (*listener)->Stop();
  server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  server->Wait();
  server.reset();
  if (sweeper != nullptr) sweeper->Stop();
  reporter.reset();
  // Before `health`, which they report to, and the Indexer go.
  mode.Stop();
  view.SetBackendFailureCallback(nullptr);
  published_health_.store(nullptr);
  // Before the mode's state goes: a scrape reads it.
  StopMetricsEndpoint();
  if (metrics_ != nullptr) metrics_->SetConnectionListener(nullptr);
  spdlog::info("stopped");
  return kExitOk;
}

}  // namespace kvindexer
