#include "bridge/bridge_runner.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include <zmq.hpp>

#include "bridge/applier_factory.h"
#include "bridge/bridge_metrics.h"
#include "bridge/live_buffer.h"
#include "bridge/live_reader.h"
#include "bridge/recovery_environment.h"
#include "bridge/replay_client.h"
#include "bridge/snapshot_client.h"
#include "bridge/stream_recovery.h"
#include "bridge/worker_address.h"
#include "bridge/worker_probe.h"
#include "common/client_channel.h"
#include "common/indexer_endpoint.h"
#include "common/log_text.h"
#include "common/metrics_http_server.h"
#include "common/metrics_registry.h"
#include "spdlog/spdlog.h"

namespace kvindexer::bridge {
namespace {

// The engine's view of the reader's buffer.
class LiveBufferQueue final : public LiveQueue {
 public:
  explicit LiveBufferQueue(LiveBuffer* buffer) : buffer_(buffer) {}
  std::optional<LiveItem> Pop(std::chrono::milliseconds timeout) override {
    return buffer_->Pop(timeout);
  }

 private:
  LiveBuffer* buffer_;
};

// The worker probe of the heartbeats, or null when there are none or the
// worker address names no port ("Recovery > Worker liveness").
std::unique_ptr<TcpWorkerProbe> MakeWorkerProbe(const BridgeConfig& config) {
  if (std::optional<std::string> warning =
          WorkerAddressWarning(config.worker_address)) {
    spdlog::warn("{}", *warning);
  }
  if (config.heartbeat_ttl.count() == 0) {
    spdlog::info("heartbeats disabled (KV_INDEXER_HEARTBEAT_TTL_MS=0)");
    return nullptr;
  }
  absl::StatusOr<WorkerHostPort> target =
      ParseWorkerHostPort(config.worker_address);
  if (!target.ok()) {
    spdlog::info(
        "heartbeats every {} ms without a worker probe: {}; they prove only "
        "that the bridge is alive",
        std::max(config.heartbeat_ttl / 3, std::chrono::milliseconds(100))
            .count(),
        std::string(target.status().message()));
    return nullptr;
  }
  spdlog::info(
      "heartbeats every {} ms (TTL {} ms) while {} accepts TCP",
      std::max(config.heartbeat_ttl / 3, std::chrono::milliseconds(100))
          .count(),
      config.heartbeat_ttl.count(), FormatHostPort(*target));
  return std::make_unique<TcpWorkerProbe>(*std::move(target));
}

}  // namespace

BridgeRunner::BridgeRunner(BridgeConfig config, StopRequest* shutdown)
    : config_(std::move(config)),
      shutdown_(shutdown),
      last_stats_(std::chrono::steady_clock::now()) {}

int BridgeRunner::Run() {
  if (config_.sink == Sink::kGrpc) {
    if (absl::StatusOr<GrpcTarget> target =
            ParseIndexerEndpoint(config_.indexer_endpoint);
        target.ok()) {
      if (std::optional<std::string> warning =
              PlaintextTokenWarning(*target, config_.security)) {
        spdlog::warn("{}", *warning);
      }
    }
  }
  zmq::context_t context(1);
  LiveBuffer buffer(config_.live_buffer_batches);
  // --- Metrics endpoint (docs/metrics.md): BridgeMetrics reads a copy of
  // stats_ that the loop publishes on its ticks.
  MetricsRegistry registry;
  std::optional<BridgeMetrics> metrics;
  std::unique_ptr<MetricsHttpServer> metrics_http;  // stopped first
  if (config_.metrics_addr.has_value()) {
    metrics.emplace(registry, buffer);
    auto started =
        MetricsHttpServer::Start(*config_.metrics_addr, registry,
                                 [&metrics]() -> std::optional<std::string> {
                                   return metrics->NotReadyReason();
                                 });
    if (!started.ok()) {
      spdlog::error(
          "cannot serve metrics on KV_INDEXER_BRIDGE_METRICS_ADDR: {}",
          std::string(started.status().message()));
      return kExitPermanentError;
    }
    metrics_http = *std::move(started);
    spdlog::info("metrics http addr={}", metrics_http->bound_address());
  }
  // --- end of the metrics endpoint
  // A reader whose Start() failed is replaced: Start() runs once per reader.
  std::optional<LiveReader> reader;
  std::unique_ptr<KvApplier> client;
  Backoff backoff;
  int exit_code = kExitOk;
  bool reader_started = false;
  bool first = true;
  // Start the reader first so nothing published while the channel
  // connects is lost; both are retried like transport errors.
  while (!shutdown_->triggered() && (!reader_started || client == nullptr)) {
    if (!first) ++stats_.reconnects;
    first = false;
    absl::Status status = absl::OkStatus();
    if (!reader_started) {
      reader.emplace(&context, config_.event_endpoint, config_.event_topic,
                     &buffer);
      status = reader->Start();
      reader_started = status.ok();
      if (!reader_started) reader.reset();
    }
    if (status.ok()) {
      absl::StatusOr<std::unique_ptr<KvApplier>> connected =
          ConnectApplier(config_, shutdown_);
      if (connected.ok()) {
        client = *std::move(connected);
      } else {
        status = connected.status();
      }
    }
    if (status.ok() || shutdown_->triggered()) break;
    if (status.code() != absl::StatusCode::kUnavailable) {
      // Only an unreachable sink is retried (the reader's failures are
      // UNAVAILABLE too); anything else stays as it is.
      spdlog::error("cannot start: {}",
                    LogText(status.ToString(), kLogMessageBytes));
      exit_code = kExitPermanentError;
      break;
    }
    const auto delay = backoff.NextDelay();
    spdlog::warn("not connected: {}; reconnecting in {} ms",
                 LogText(status.ToString(), kLogMessageBytes), delay.count());
    if (shutdown_->WaitFor(delay)) break;
  }

  if (client != nullptr && !shutdown_->triggered()) {
    spdlog::info(
        "connected: {} and SGLang events {} (topic \"{}\") as "
        "worker_id \"{}\"",
        DescribeSink(config_), config_.event_endpoint, config_.event_topic,
        config_.worker_id);
    std::optional<ReplayClient> replay;
    if (!config_.replay_endpoint.empty()) {
      replay.emplace(&context, config_.replay_endpoint, shutdown_);
    }
    std::optional<SnapshotClient> snapshot;
    if (!config_.snapshot_endpoint.empty()) {
      snapshot.emplace(&context, config_.snapshot_endpoint, config_.dp_rank,
                       shutdown_, kSnapshotFetchTimeout,
                       config_.snapshot_protocol);
    }
    std::unique_ptr<TcpWorkerProbe> worker_probe = MakeWorkerProbe(config_);
    SystemRecoveryClock clock(shutdown_);
    LiveBufferQueue queue(&buffer);
    std::mt19937_64 rng(std::random_device{}());
    RecoveryIo io;
    io.applier = client.get();
    io.live = &queue;
    io.replay = replay ? &*replay : nullptr;
    io.snapshot = snapshot ? &*snapshot : nullptr;
    io.worker_probe = worker_probe.get();
    io.clock = &clock;
    io.random = [&rng] { return rng(); };
    io.stats = &stats_;
    StreamRecovery engine(RecoveryOptionsFromConfig(config_), io);
    if (metrics) metrics->SetConnected(true);
    absl::Status status = engine.Run([this, &metrics] {
      const auto now = std::chrono::steady_clock::now();
      MaybeLogStats(now);
      if (metrics) metrics->Publish(stats_, now);
    });
    if (!status.ok() && !shutdown_->triggered()) {
      // The engine stops on a request the indexer rejected permanently or
      // on a failed live reader; it logged which at ERROR.
      spdlog::error(
          "stopping on a permanent error: {}; exiting (for a rejected request "
          "check KV_INDEXER_WORKER_ID, KV_INDEXER_SEQUENCE_GATE and the "
          "bridge/server versions)",
          LogText(status.ToString(), kLogMessageBytes));
      exit_code = kExitPermanentError;
    }
  }
  if (reader) reader->Stop();
  buffer.Close();
  if (metrics) {
    metrics->SetConnected(false);
    metrics->Publish(stats_, std::chrono::steady_clock::now(), /*force=*/true);
  }
  spdlog::info("bridge stopped: {}", stats_.FormatLine());
  return exit_code;
}

void BridgeRunner::MaybeLogStats(std::chrono::steady_clock::time_point now) {
  if (config_.stats_interval.count() == 0) return;
  if (now - last_stats_ < config_.stats_interval) return;
  last_stats_ = now;
  spdlog::info("stats: {}", stats_.FormatLine());
}

}  // namespace kvindexer::bridge
