#include "server/server_runner.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "absl/strings/str_join.h"
#include "common/clock.h"
#include "common/log_setup.h"
#include "common/metrics_http_server.h"
#include "common/metrics_registry.h"
#include "common/shutdown_signals.h"
#include "core/backend_loader.h"
#include "core/indexer.h"
#include "durable/durable_store.h"
#include "fleet/event_log.h"
#include "fleet/jetstream_fleet.h"
#include "fleet/snapshot_store.h"
#include "fmt/format.h"
#include "grpcpp/grpcpp.h"
#include "replica/event_source_config.h"
#include "replica/log_follower.h"
#include "replica/replica_liveness.h"
#include "replica/replica_snapshot.h"
#include "replica/snapshot_scheduler.h"
#include "server/admin_service.h"
#include "server/kv_indexer_service.h"
#include "server/liveness_sweeper.h"
#include "server/security_config.h"
#include "server/server_config.h"
#include "server/server_metrics.h"
#include "server/serving_health.h"
#include "server/transport_settings.h"
#include "server/write_authorizer.h"
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

// This process's name among the fleet's replicas, in the snapshot lease and
// in the manifests it writes: host, pid and a random part, so that a
// restarted replica never takes its old lease for its own.
std::string ReplicaName() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  std::random_device random;
  return fmt::format("{}-{}-{:08x}", host[0] != '\0' ? host : "replica",
                     ::getpid(), random());
}

// How a replica's follower gets back to a whole index after the log was
// trimmed under it (LogFollowerOptions::reload); null without a store.
std::function<absl::StatusOr<std::optional<uint64_t>>()> SnapshotReload(
    fleet::SnapshotStore* store, Indexer& indexer, ServerMetrics* metrics) {
  if (store == nullptr) return nullptr;
  return
      [store, &indexer, metrics]() -> absl::StatusOr<std::optional<uint64_t>> {
        const auto started = std::chrono::steady_clock::now();
        absl::StatusOr<std::optional<::kvindexer::fleet::v1::SnapshotManifest>>
            loaded = ReloadNewestSnapshot(*store, indexer.durable_state(),
                                          indexer.operator_view());
        if (!loaded.ok()) return loaded.status();
        if (!loaded->has_value()) return std::nullopt;
        const ::kvindexer::fleet::v1::SnapshotManifest& manifest = **loaded;
        spdlog::info(
            "reloaded fleet snapshot id={} position={} parts={} bytes={} "
            "workers={} seconds={:.3f}",
            manifest.id(), manifest.position(), manifest.parts(),
            manifest.bytes(), indexer.durable_state().worker_count(),
            std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                          started)
                .count());
        if (metrics != nullptr) {
          metrics->SetLoadedSnapshotPosition(manifest.position());
        }
        return manifest.position();
      };
}

}  // namespace

std::string BoundAddress(const std::string& listen_addr, int bound_port) {
  const size_t colon = listen_addr.rfind(':');
  return fmt::format("{}:{}", listen_addr.substr(0, colon), bound_port);
}

int RunServer(std::span<const char* const> args) {
  // Before anything can start a thread.
  const ShutdownSignals signals = ShutdownSignals::Block();

  const std::string_view program = args.empty() ? "kv-indexer-server" : args[0];
  const auto action = ParseCommandLine(args);
  if (!action.ok()) {
    std::fprintf(stderr, "kv-indexer-server: %s\n",
                 std::string(action.status().message()).c_str());
    return kExitUsage;
  }
  if (*action == CommandLineAction::kHelp) {
    std::fputs(UsageText(program).c_str(), stdout);
    return kExitOk;
  }

  SetUpLogging("kv-indexer-server");
  const auto config = LoadServerConfig(ProcessEnvironment());
  if (!config.ok()) {
    spdlog::error("invalid configuration: {}",
                  std::string(config.status().message()));
    return kExitUsage;
  }
  spdlog::set_level(config->log_level);
  if (!signals.active()) {
    spdlog::warn(
        "cannot take over SIGINT/SIGTERM ({}); they keep their default "
        "action and shutdown will not be graceful",
        signals.error());
  }

  auto loaded = LoadedBackend::Load(config->backend, config->backend_path);
  if (!loaded.ok()) {
    spdlog::error("cannot load the index backend: {}",
                  std::string(loaded.status().message()));
    return kExitFailure;
  }
  const BackendDescriptor& descriptor = (*loaded)->descriptor();
  if ((*loaded)->abi_minor() != descriptor.abi_minor) {
    spdlog::warn(
        "backend {} says backend ABI {}.{} but leaves the calls of {}.{} to "
        "the header's defaults; it is used as ABI {}.{} (docs/backend-abi.md, "
        "\"Source compatibility across minors\")",
        descriptor.name != nullptr ? descriptor.name : "?",
        descriptor.abi_major, descriptor.abi_minor, descriptor.abi_major,
        (*loaded)->abi_minor() + 1, descriptor.abi_major,
        (*loaded)->abi_minor());
  }
  Indexer indexer((*loaded)->backend(), /*gate_log=*/nullptr, config->limits,
                  (*loaded)->abi_minor());
  // A replica of the fleet event log (docs/fleet.md, "Replicas follow the
  // log"): the log and the thread that applies it. Declared right after the
  // Indexer so that they outlive everything that reads them (the metrics
  // endpoint's scrapes) and go before the Indexer.
  const EventSourceConfig& event_source = config->event_source;
  std::unique_ptr<fleet::EventLog> event_log;
  std::unique_ptr<fleet::SnapshotStore> snapshot_store;
  std::unique_ptr<fleet::LeaseRegister> lease_register;
  ReplicaStart replica_start;
  std::unique_ptr<LogFollower> follower;
  std::unique_ptr<fleet::SnapshotScheduler> snapshot_scheduler;
  std::atomic<const LogFollower*> published_follower{nullptr};
  // Security (docs/security.md): the write token, TLS and the warning for
  // a server reachable beyond loopback without them.
  const WriteAuthorizer write_authorizer =
      config->security.has_write_token()
          ? WriteAuthorizer(config->security.write_token)
          : WriteAuthorizer();
  spdlog::info("{}", SecuritySummary(config->security));
  if (const auto warning =
          BeyondLoopbackWarning(config->listen_addr, config->security)) {
    spdlog::warn("{}", *warning);
  }
  const MonotonicClock::TimePoint started_at =
      indexer.operator_view().clock().Now();
  // The metrics (docs/metrics.md) are declared before the service that
  // records into them, so that they outlive it and any call its executors
  // still run while it is destroyed.
  MetricsRegistry registry;
  std::unique_ptr<ServerMetrics> metrics;
  KvIndexerService service(
      indexer.operations(), config->prefix_query_max_inflight,
      WallClock::Real(), /*rejection_log=*/nullptr,
      /*read_heartbeats=*/config->liveness, &write_authorizer);
  // A replica changes only through the log.
  if (event_source.follows_log()) service.FollowLog();

  spdlog::info(
      "{} addr={} prefix_query_max_inflight={} max_concurrent_streams={} "
      "backend={} backend_version={} backend_path={} backend_build=\"{}\" "
      "server_version={} server_build=\"{}\"",
      kStartupMessage, config->listen_addr, config->prefix_query_max_inflight,
      kMaxConcurrentStreams, descriptor.name, descriptor.version,
      (*loaded)->path(), descriptor.build_info, KVINDEXER_VERSION,
      kServerBuildInfo);

  // docs/contract.md, "Limits > Bounds".
  spdlog::info(
      "request bounds max_worker_id_bytes={} max_worker_address_bytes={} "
      "max_worker_epoch_bytes={} max_workers={} max_prefix_answer_bytes={}",
      config->limits.max_worker_id_bytes,
      config->limits.max_worker_address_bytes,
      config->limits.max_worker_epoch_bytes, config->limits.max_workers,
      config->limits.max_prefix_answer_bytes);

  // --- Metrics endpoint (docs/metrics.md): up before recovery, so that
  // /metrics, /healthz and /readyz answer while the data directory loads.
  enum class Phase { kStarting, kServing, kStopping };
  std::atomic<Phase> phase{Phase::kStarting};
  // The data directory's store once it is open, for /readyz.
  std::atomic<const durable::DurableStore*> published_store{nullptr};
  std::unique_ptr<MetricsHttpServer> metrics_http;
  if (config->metrics_addr.has_value()) {
    metrics = std::make_unique<ServerMetrics>(registry, indexer.operator_view(),
                                              service);
    auto started = MetricsHttpServer::Start(
        *config->metrics_addr, registry,
        [&phase, &indexer, &published_follower,
         &published_store]() -> std::optional<std::string> {
          switch (phase.load()) {
            case Phase::kStarting:
              return "starting: recovering state or binding the gRPC port";
            case Phase::kStopping:
              return "shutting down";
            case Phase::kServing:
              break;
          }
          // As grpc.health.v1 reports NOT_SERVING (docs/health.md).
          if (std::optional<std::string> failure =
                  indexer.operator_view().BackendFailure()) {
            return "backend failed: " + *failure;
          }
          if (const durable::DurableStore* s = published_store.load()) {
            if (std::optional<std::string> failure = s->LogFailure()) {
              return "state log failed: " + *failure;
            }
          }
          if (const LogFollower* f = published_follower.load()) {
            return f->NotReadyReason();
          }
          return std::nullopt;
        });
    if (!started.ok()) {
      spdlog::error("cannot serve metrics on {}={}: {}", kMetricsAddrVar,
                    config->metrics_addr->ToString(),
                    std::string(started.status().message()));
      return kExitFailure;
    }
    metrics_http = *std::move(started);
    spdlog::info("metrics http addr={}", metrics_http->bound_address());
  }
  // --- end of the metrics endpoint

  // Recovery comes before the listen address is bound, so that no client
  // ever sees a partly recovered index (docs/durability.md, "Recovery").
  // Declared after the Indexer and before the gRPC server: it outlives every
  // call that can append to it and detaches before the Indexer goes.
  std::unique_ptr<durable::DurableStore> store;
  if (const DurabilityConfig& durability = config->durability;
      durability.enabled()) {
    spdlog::info(
        "restart-safe state on dir={} wal_sync={} checkpoint_bytes={} "
        "checkpoint_builder={} checkpoint_timeout_ms={}",
        durability.data_dir, WalSyncName(durability.wal_sync),
        durability.checkpoint_bytes,
        CheckpointBuilderName(durability.checkpoint_builder),
        durability.checkpoint_timeout.count());
    // A builder process is this executable run again: main() hands such a
    // call to durable::RunCheckpointBuilder.
    auto opened = durable::DurableStore::Open(
        durable::DurableOptions{
            .dir = durability.data_dir,
            .sync = durability.wal_sync,
            .checkpoint_bytes = durability.checkpoint_bytes,
            .backend = (*loaded)->backend(),
            .backend_abi_minor = (*loaded)->abi_minor(),
            .checkpoint_builder =
                durability.checkpoint_builder == CheckpointBuilder::kProcess
                    ? "/proc/self/exe"
                    : "",
            .checkpoint_timeout = durability.checkpoint_timeout},
        &indexer.durable_state());
    if (!opened.ok()) {
      spdlog::error("cannot use {}={}: {}", kDataDirVar, durability.data_dir,
                    std::string(opened.status().message()));
      return kExitFailure;
    }
    store = *std::move(opened);
    if (metrics != nullptr) metrics->SetDurableStore(store.get());
    published_store.store(store.get());
  } else if (event_source.follows_log()) {
    // LoadServerConfig refuses a data directory with jetstream.
    spdlog::info(
        "{}=jetstream: a replica of the fleet event log stream={} urls={} "
        "max_lag_records={}; the mutation RPCs are refused",
        kEventSourceVar, event_source.log->stream,
        fleet::RedactedNatsUrls(event_source.log->nats.urls),
        event_source.max_lag_records);
    auto opened = fleet::OpenJetStreamFleet(*event_source.log);
    if (!opened.ok()) {
      spdlog::error("cannot open the fleet event log ({}=jetstream): {}",
                    kEventSourceVar, opened.status().ToString());
      if (metrics_http != nullptr) metrics_http->Stop();
      return kExitFailure;
    }
    event_log = std::move(opened->log);
    snapshot_store = std::move(opened->snapshots);
    lease_register = std::move(opened->lease);
    // The newest snapshot goes in before the address is bound; the log is
    // followed from the position after it.
    absl::StatusOr<ReplicaStart> start =
        snapshot_store != nullptr
            ? LoadNewestSnapshot(*snapshot_store, indexer.durable_state(),
                                 indexer.operator_view())
            : absl::StatusOr<ReplicaStart>(ReplicaStart{});
    if (!start.ok()) {
      spdlog::error("{}=jetstream: {}", kEventSourceVar,
                    start.status().ToString());
      if (metrics_http != nullptr) metrics_http->Stop();
      return kExitFailure;
    }
    replica_start = *std::move(start);
    if (replica_start.snapshot.has_value()) {
      spdlog::info(
          "loaded fleet snapshot id={} position={} parts={} bytes={} "
          "workers={} seconds={:.3f}",
          replica_start.snapshot->id(), replica_start.snapshot->position(),
          replica_start.snapshot->parts(), replica_start.snapshot->bytes(),
          indexer.durable_state().worker_count(), replica_start.seconds);
      if (metrics != nullptr) {
        metrics->SetLoadedSnapshotPosition(replica_start.snapshot->position());
      }
    } else {
      spdlog::info("no fleet snapshot yet: following the log from its start");
    }
  } else {
    spdlog::info(
        "restart-safe state off ({} unset): a restart empties the index",
        kDataDirVar);
  }
  // The admin API (docs/admin-api.md), after the store it reports on. Its
  // GetStats reports health as published below, once the server listens.
  std::atomic<const ServingHealth*> published_health{nullptr};
  AdminService admin(AdminSources{
      .indexer = &indexer.operator_view(),
      .backend_name = descriptor.name,
      .backend_version = descriptor.version,
      .backend_path = (*loaded)->path(),
      .backend_abi_major = descriptor.abi_major,
      .backend_abi_minor = (*loaded)->abi_minor(),
      .admission = &service.admission(),
      .prefix_query_max_inflight = config->prefix_query_max_inflight,
      .store = store.get(),
      .data_dir = config->durability.data_dir,
      .wal_sync = std::string(WalSyncName(config->durability.wal_sync)),
      .authorizer = &write_authorizer,
      .follows_log = event_source.follows_log(),
      .max_worker_id_bytes = config->limits.max_worker_id_bytes,
      .server_version = KVINDEXER_VERSION,
      .started = started_at,
      .backend_failure =
          [&indexer] { return indexer.operator_view().BackendFailure(); },
      .health = [&published_health]() -> std::string {
        const ServingHealth* health = published_health.load();
        return health == nullptr || health->serving() ? "SERVING"
                                                      : "NOT_SERVING";
      },
      .metrics = metrics != nullptr ? metrics->rpc() : nullptr,
  });
  // grpc.health.v1 and reflection (docs/health.md): before the builder.
  EnableHealthAndReflection();
  grpc::ServerBuilder builder;
  ApplyTransportSettings(builder);
  int bound_port = 0;
  builder.AddListeningPort(config->listen_addr,
                           MakeServerCredentials(config->security),
                           &bound_port);
  builder.RegisterService(&service);
  builder.RegisterService(&admin);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound_port == 0) {
    spdlog::error(
        "cannot listen on {}={}: the address is in use, not local, or not "
        "permitted",
        kListenAddrVar, config->listen_addr);
    if (server != nullptr) server->Shutdown();
    if (metrics_http != nullptr) metrics_http->Stop();  // before the store
    return kExitFailure;
  }
  // SERVING from here on, the state being recovered, until the backend
  // fails in a way it cannot continue from, the state log fails, or
  // shutdown begins (docs/health.md); before the line that tells tests we
  // listen.
  ServingHealth health(server->GetHealthCheckService(), HealthServiceNames());
  indexer.operator_view().SetBackendFailureCallback(
      [&health](const std::string& failure) { health.BackendFailed(failure); });
  if (store != nullptr) {
    store->SetOnLogFailure(
        [&health](const std::string& failure) { health.LogFailed(failure); });
  }
  // A replica answers reads at once but is NOT_SERVING until it has caught
  // up with the log, and whenever it lags by more than the bound.
  if (event_log != nullptr) {
    follower = std::make_unique<LogFollower>(
        *event_log, indexer.operations(),
        LogFollowerOptions{
            .start_position = replica_start.follow_from,
            .max_lag_records = event_source.max_lag_records,
            .max_silence = event_source.max_silence,
            .on_readiness =
                [&health](std::optional<std::string> behind) {
                  health.LogFollowing(std::move(behind));
                },
            .reload =
                SnapshotReload(snapshot_store.get(), indexer, metrics.get()),
        });
    health.LogFollowing(follower->NotReadyReason());
    if (metrics != nullptr) metrics->SetLogFollower(follower.get());
    published_follower.store(follower.get());
  }
  health.Listening();
  published_health.store(&health);
  spdlog::info("listening addr={}",
               BoundAddress(config->listen_addr, bound_port));
  phase = Phase::kServing;
  if (follower != nullptr) follower->Start();
  // Snapshot writing (docs/fleet.md, "Snapshots"): every replica competes
  // for the lease; the holder writes one each interval.
  if (follower != nullptr && snapshot_store != nullptr &&
      lease_register != nullptr && event_source.snapshots.interval_ms > 0) {
    fleet::SnapshotRoundOptions round;
    round.writer = ReplicaName();
    round.limits = config->limits;
    spdlog::info(
        "fleet snapshots: replica {} competes for the lease; interval_ms={} "
        "keep={} lease_ttl_ms={}",
        round.writer, event_source.snapshots.interval_ms,
        event_source.snapshots.keep, event_source.snapshots.lease_ttl_ms);
    snapshot_scheduler = std::make_unique<fleet::SnapshotScheduler>(
        event_log.get(), snapshot_store.get(), lease_register.get(),
        event_source.snapshots, std::move(round), &MonotonicClock::Real(), [] {
          return std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
              .count();
        });
    if (metrics != nullptr) {
      metrics->SetSnapshotScheduler(snapshot_scheduler.get());
    }
    snapshot_scheduler->Start();
  }

  // Worker liveness (docs/contract.md, "Recovery > Worker liveness and
  // removal").
  std::unique_ptr<LivenessSweeper> sweeper;
  if (config->liveness) {
    spdlog::info("worker liveness on sweep_ms={}", config->liveness_sweep_ms);
    sweeper = std::make_unique<LivenessSweeper>(
        std::chrono::milliseconds(config->liveness_sweep_ms),
        [&indexer, &follower, replica = ReplicaLiveness()]() mutable {
          // A replica sweeps only while it hears the log (docs/fleet.md,
          // "Worker liveness on replicas").
          OperatorView& view = indexer.operator_view();
          if (follower != nullptr &&
              !replica.BeforeSweep(
                  follower->in_contact() && follower->caught_up(), view,
                  view.clock().Now())) {
            return;
          }
          // A failure is logged by the Indexer and retried next sweep.
          view.SweepLiveness(view.clock().Now());
        });
  } else {
    spdlog::info("worker liveness off: heartbeats are ignored ({}=0)",
                 kLivenessVar);
  }

  // A second signal during the grace period ends the process at once; the
  // data directory is then recovered as after a crash (docs/operations.md).
  std::optional<ShutdownSignalWatcher> second_signal;
  if (const std::optional<int> signal_number = signals.Wait()) {
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
    if (const std::optional<int> again = signals.TakePending()) {
      exit_at_once(*again);
    }
    second_signal.emplace(signals, exit_at_once);
  } else {
    // No signal handling: serve until the process is killed.
    server->Wait();
  }
  // Probes see NOT_SERVING while running calls finish (docs/health.md).
  health.ShuttingDown();
  phase = Phase::kStopping;
  server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  server->Wait();
  server.reset();
  if (sweeper != nullptr) sweeper->Stop();
  // Before the log it reads; gives the lease up for another replica.
  if (snapshot_scheduler != nullptr) {
    if (metrics != nullptr) metrics->SetSnapshotScheduler(nullptr);
    snapshot_scheduler->Stop();
  }
  // Before `health`, which it reports to, and the Indexer go.
  if (follower != nullptr) follower->Stop();
  // Before `health` goes.
  indexer.operator_view().SetBackendFailureCallback(nullptr);
  if (store != nullptr) store->SetOnLogFailure(nullptr);
  // Before the store goes: a scrape reads it.
  if (metrics_http != nullptr) metrics_http->Stop();
  spdlog::info("stopped");
  return kExitOk;
}

}  // namespace kvindexer
