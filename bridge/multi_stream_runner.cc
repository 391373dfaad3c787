#include "bridge/multi_stream_runner.h"

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>

#include <zmq.hpp>

#include "bridge/backoff.h"
#include "bridge/bridge_runner.h"
#include "bridge/bridge_stats.h"
#include "bridge/indexer_client.h"
#include "bridge/live_buffer.h"
#include "bridge/live_reader.h"
#include "bridge/multi_stream_metrics.h"
#include "bridge/replay_client.h"
#include "bridge/snapshot_client.h"
#include "bridge/stream_supervisor.h"
#include "bridge/worker_address.h"
#include "bridge/worker_probe.h"
#include "common/log_text.h"
#include "common/metrics_http_server.h"
#include "common/metrics_registry.h"
#include "spdlog/spdlog.h"

namespace kvindexer::bridge {
namespace {

constexpr std::chrono::milliseconds kConfigurePeriod{1000};
constexpr std::chrono::seconds kRpcTimeout{10};

class BufferQueue final : public LiveQueue {
 public:
  explicit BufferQueue(LiveBuffer* buffer) : buffer_(buffer) {}
  std::optional<LiveItem> Pop(std::chrono::milliseconds timeout) override {
    return buffer_->Pop(timeout);
  }

 private:
  LiveBuffer* buffer_;
};

// One entry's stream: owned by the runner, run by its own thread.
struct StreamSlot {
  WorkerEntry entry;
  std::string name;  // the stream key, for logs and the stats lines
  StopRequest stop;  // triggered when the process shuts down
  SystemRecoveryClock clock{&stop};
  std::optional<StreamSupervisor> supervisor;
  std::thread thread;
  BridgeStats working;  // the stream thread's own
  mutable std::mutex mu;
  BridgeStats published;            // guarded by mu
  std::atomic<size_t> buffered{0};  // the live buffer's depth at the last tick
};

// One attempt of a stream: the reader, the engine and its sockets, made
// anew; returns when the stream stops (OK) or fails (the engine's error).
absl::Status RunAttempt(const BridgeConfig& config, StreamSlot* slot,
                        zmq::context_t* context,
                        const std::shared_ptr<grpc::Channel>& channel) {
  const WorkerEntry& entry = slot->entry;
  if (entry.event_endpoint.empty()) {
    // Only a "discover" entry may leave it out, and /server_info is not
    // read yet (docs/bridge-events.md, "Many streams in one process > Not
    // yet").
    return absl::FailedPreconditionError(
        "the entry has no event_endpoint and discovery from /server_info is "
        "not implemented; set event_endpoint");
  }
  LiveBuffer buffer(config.live_buffer_batches);
  std::optional<LiveReader> reader;
  Backoff backoff;
  while (true) {
    reader.emplace(context, entry.event_endpoint, entry.event_topic, &buffer);
    absl::Status started = reader->Start();
    if (started.ok()) break;
    reader.reset();
    if (slot->stop.triggered()) return absl::OkStatus();
    ++slot->working.reconnects;
    const auto delay = backoff.NextDelay();
    spdlog::warn("stream {}: cannot read {}: {}; retrying in {} ms", slot->name,
                 entry.event_endpoint,
                 LogText(started.ToString(), kLogMessageBytes), delay.count());
    if (slot->stop.WaitFor(delay)) return absl::OkStatus();
  }
  std::unique_ptr<IndexerClient> client = IndexerClient::OnChannel(
      channel, &slot->stop, kRpcTimeout, config.security);
  std::optional<ReplayClient> replay;
  if (!entry.replay_endpoint.empty()) {
    replay.emplace(context, entry.replay_endpoint, &slot->stop);
  }
  std::optional<SnapshotClient> snapshot;
  if (!entry.snapshot_endpoint.empty()) {
    snapshot.emplace(context, entry.snapshot_endpoint, entry.dp_rank,
                     &slot->stop, kSnapshotFetchTimeout,
                     entry.snapshot_protocol_version == 1
                         ? SnapshotProtocol::kV1
                         : SnapshotProtocol::kV2);
  }
  std::unique_ptr<TcpWorkerProbe> probe;
  if (config.heartbeat_ttl.count() != 0) {
    if (absl::StatusOr<WorkerHostPort> target =
            ParseWorkerHostPort(entry.worker_address);
        target.ok()) {
      probe = std::make_unique<TcpWorkerProbe>(*std::move(target));
    }
  }
  SystemRecoveryClock clock(&slot->stop);
  BufferQueue queue(&buffer);
  std::mt19937_64 rng(std::random_device{}());
  RecoveryIo io;
  io.applier = client.get();
  io.live = &queue;
  io.replay = replay ? &*replay : nullptr;
  io.snapshot = snapshot ? &*snapshot : nullptr;
  io.worker_probe = probe.get();
  io.clock = &clock;
  io.random = [&rng] { return rng(); };
  io.stats = &slot->working;
  StreamRecovery engine(RecoveryOptionsForEntry(config, entry), io);
  spdlog::info("stream {}: following {} (topic \"{}\")", slot->name,
               entry.event_endpoint, entry.event_topic);
  absl::Status status = engine.Run([slot, &buffer] {
    slot->buffered.store(buffer.batches());
    std::lock_guard<std::mutex> lock(slot->mu);
    slot->published = slot->working;
  });
  slot->buffered.store(0);
  reader->Stop();
  buffer.Close();
  {
    std::lock_guard<std::mutex> lock(slot->mu);
    slot->published = slot->working;
  }
  if (slot->stop.triggered()) return absl::OkStatus();
  return status;
}

// The stream's state for the stats line and kvindexer_bridge_streams.
std::string SlotState(const StreamSlot& slot, const BridgeStats& stats) {
  if (slot.supervisor->parked()) return "parked";
  return stats.state;
}

}  // namespace

RecoveryOptions RecoveryOptionsForEntry(const BridgeConfig& config,
                                        const WorkerEntry& entry) {
  RecoveryOptions options = RecoveryOptionsFromConfig(config);
  options.header.worker_id = entry.worker_id;
  options.header.worker_address = entry.worker_address;
  kv_indexer::v1::StreamId id;
  id.set_namespace_(entry.stream_namespace);
  id.set_worker_id(entry.worker_id);
  id.set_dp_rank(entry.dp_rank);
  options.header.stream_id = std::move(id);
  return options;
}

kv_indexer::v1::ConfigureExpectedWorkersRequest MultiStreamConfigure(
    const BridgeConfig& config,
    const std::vector<const WorkerEntry*>& entries) {
  kv_indexer::v1::ConfigureExpectedWorkersRequest request;
  for (const WorkerEntry* listed : entries) {
    const WorkerEntry& entry = *listed;
    kv_indexer::v1::ExpectedWorker* worker = request.add_workers();
    worker->set_worker_id(entry.worker_id);
    worker->set_worker_address(entry.worker_address);
    if (config.cache_spec) *worker->mutable_cache_spec() = *config.cache_spec;
    kv_indexer::v1::StreamId* id = worker->mutable_stream_id();
    id->set_namespace_(entry.stream_namespace);
    id->set_worker_id(entry.worker_id);
    id->set_dp_rank(entry.dp_rank);
    worker->set_model(entry.model);
    worker->set_hash_schema_version(entry.hash_schema_version);
    worker->set_page_size(entry.page_size);
    worker->set_is_bigram(entry.is_bigram);
  }
  return request;
}

MultiStreamRunner::MultiStreamRunner(BridgeConfig config, StopRequest* shutdown,
                                     std::chrono::milliseconds park_period)
    : config_(std::move(config)),
      shutdown_(shutdown),
      park_period_(park_period) {}

int MultiStreamRunner::Run() {
  // The channel: an unusable endpoint is retried like an unreachable
  // server, as in single-worker mode.
  std::shared_ptr<grpc::Channel> channel;
  Backoff backoff;
  while (!shutdown_->triggered()) {
    absl::StatusOr<std::shared_ptr<grpc::Channel>> opened =
        IndexerClient::OpenChannel(config_.indexer_endpoint, config_.security);
    if (opened.ok()) {
      channel = *std::move(opened);
      break;
    }
    const auto delay = backoff.NextDelay();
    spdlog::warn("not connected: {}; reconnecting in {} ms",
                 LogText(opened.status().ToString(), kLogMessageBytes),
                 delay.count());
    if (shutdown_->WaitFor(delay)) break;
  }
  if (channel == nullptr) return kExitOk;

  zmq::context_t context(1);
  std::deque<StreamSlot> slots;  // stable addresses
  for (const WorkerEntry& entry : config_.workers) {
    StreamSlot& slot = slots.emplace_back();
    slot.entry = entry;
    slot.name = DescribeStreamKey(entry);
    slot.working.state = "syncing";
    slot.published = slot.working;
    slot.supervisor.emplace(
        slot.name,
        [this, &slot, &context, &channel] {
          return RunAttempt(config_, &slot, &context, channel);
        },
        &slot.clock, park_period_);
  }
  // --- Metrics endpoint (docs/metrics.md): the collector reads the copies
  // the streams publish on their ticks. Declared after `slots`, so it is
  // stopped before they go.
  std::atomic<bool> configure_unreachable{false};
  MetricsRegistry registry;
  registry.AddCollector([&slots](MetricsWriter& w) {
    std::vector<StreamView> views;
    for (const StreamSlot& slot : slots) {
      StreamView& view = views.emplace_back();
      view.entry = &slot.entry;
      {
        std::lock_guard<std::mutex> lock(slot.mu);
        view.stats = slot.published;
      }
      view.buffered_batches = slot.buffered.load();
      view.parked = slot.supervisor->parked();
    }
    WriteMultiStreamSeries(w, views);
  });
  std::unique_ptr<MetricsHttpServer> metrics_http;
  if (config_.metrics_addr.has_value()) {
    auto started = MetricsHttpServer::Start(
        *config_.metrics_addr, registry,
        [&configure_unreachable]() -> std::optional<std::string> {
          if (configure_unreachable.load()) {
            return "the indexer is unreachable: the last Configure failed "
                   "with UNAVAILABLE or DEADLINE_EXCEEDED";
          }
          return std::nullopt;
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
  for (StreamSlot& slot : slots) {
    slot.thread = std::thread([&slot] { slot.supervisor->Run(); });
  }
  spdlog::info("following {} streams; indexer {}", slots.size(),
               config_.indexer_endpoint);

  std::unique_ptr<IndexerClient> control = IndexerClient::OnChannel(
      channel, shutdown_, kRpcTimeout, config_.security);
  absl::Status last_configure = absl::OkStatus();
  auto last_stats = std::chrono::steady_clock::now();
  auto print_stats = [&slots] {
    for (const StreamSlot& slot : slots) {
      BridgeStats stats;
      {
        std::lock_guard<std::mutex> lock(slot.mu);
        stats = slot.published;
      }
      spdlog::info("stats: stream {} stream_state={} {}", slot.name,
                   SlotState(slot, stats), stats.FormatLine());
    }
  };
  while (!shutdown_->triggered()) {
    std::vector<const WorkerEntry*> active;
    for (const StreamSlot& slot : slots) {
      if (!slot.supervisor->parked()) active.push_back(&slot.entry);
    }
    absl::Status status = absl::OkStatus();
    if (!active.empty()) {
      kv_indexer::v1::ConfigureExpectedWorkersResponse response;
      status =
          control->Configure(MultiStreamConfigure(config_, active), &response);
    }
    if (!status.ok() && !shutdown_->triggered() &&
        status.code() != last_configure.code()) {
      spdlog::warn(
          "ConfigureExpectedWorkers failed: {}; sent again every "
          "second",
          LogText(status.ToString(), kLogMessageBytes));
    } else if (status.ok() && !last_configure.ok()) {
      spdlog::info("ConfigureExpectedWorkers accepted again");
    }
    last_configure = status;
    configure_unreachable.store(
        status.code() == absl::StatusCode::kUnavailable ||
        status.code() == absl::StatusCode::kDeadlineExceeded);
    const auto now = std::chrono::steady_clock::now();
    if (config_.stats_interval.count() != 0 &&
        now - last_stats >= config_.stats_interval) {
      last_stats = now;
      print_stats();
    }
    if (shutdown_->WaitFor(kConfigurePeriod)) break;
  }
  metrics_http.reset();
  for (StreamSlot& slot : slots) slot.stop.Trigger();
  for (StreamSlot& slot : slots) {
    if (slot.thread.joinable()) slot.thread.join();
  }
  spdlog::info("bridge stopped");
  print_stats();
  return kExitOk;
}

}  // namespace kvindexer::bridge
