#include "bridge/multi_stream_runner.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

#include <zmq.hpp>

#include "bridge/backoff.h"
#include "bridge/bridge_runner.h"
#include "bridge/bridge_stats.h"
#include "bridge/configure_broadcaster.h"
#include "bridge/indexer_client.h"
#include "bridge/indexer_epoch_watch.h"
#include "bridge/live_buffer.h"
#include "bridge/live_reader.h"
#include "bridge/multi_stream_metrics.h"
#include "bridge/replay_client.h"
#include "bridge/server_info_client.h"
#include "bridge/snapshot_client.h"
#include "bridge/snapshot_limiter.h"
#include "bridge/stream_discovery.h"
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
// Streams one all_dp_ranks entry may expand to.
constexpr uint32_t kMaxDiscoveredRanks = 1024;

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
  WorkerEntry entry;  // as listed (or expanded); its key never changes
  std::string name;   // the stream key, for logs and the stats lines
  StopRequest stop;   // triggered when the process shuts down
  SystemRecoveryClock clock{&stop};
  std::optional<StreamDiscovery> discovery;  // with entry.discover only
  std::optional<StreamSupervisor> supervisor;
  std::thread thread;
  BridgeStats working;  // the stream thread's own
  mutable std::mutex mu;
  BridgeStats published;  // guarded by mu
  // The entry as followed, for Configure: `entry` itself, or what
  // discovery made of it; nullopt until a discovery answered. Guarded by mu.
  std::optional<WorkerEntry> followed;
  // The worker generation the stream's engine last learnt (empty: none);
  // guarded by mu.
  std::string worker_generation;
  std::atomic<size_t> buffered{0};  // the live buffer's depth at the last tick
};

// What the streams of one process share besides the channel.
struct SharedByStreams {
  ConfigureBroadcaster* configure = nullptr;
  IndexerEpochWatch* epochs = nullptr;
  SnapshotLimiter* snapshot_limiter = nullptr;
};

// One attempt of a stream: the reader, the engine and its sockets, made
// anew; returns when the stream stops (OK) or fails (the engine's error).
absl::Status RunAttempt(const BridgeConfig& config, StreamSlot* slot,
                        zmq::context_t* context,
                        const std::shared_ptr<grpc::Channel>& channel,
                        const SharedByStreams& shared) {
  WorkerEntry entry = slot->entry;
  if (slot->discovery) {
    absl::StatusOr<WorkerEntry> followed = slot->discovery->Resolve();
    if (slot->stop.triggered()) return absl::OkStatus();
    if (!followed.ok()) return followed.status();
    entry = *std::move(followed);
    std::lock_guard<std::mutex> lock(slot->mu);
    slot->followed = entry;
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
                         : SnapshotProtocol::kV2,
                     /*compare_v2_rank=*/false);
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
  // The epoch changes this stream has answered: it resynchronises when the
  // watch counts more. Its own Configure or Begin answers bring it up to
  // date, as its synchronisation already runs under the epoch they carry.
  uint64_t epoch_changes_seen = shared.epochs->changes();
  io.configure = [slot, &shared, &client, &entry,
                  &epoch_changes_seen](const std::string& generation) {
    {
      std::lock_guard<std::mutex> lock(slot->mu);
      slot->worker_generation = generation;
    }
    const bool registered = ConfigureStream(
        *shared.configure, entry, [slot] { return slot->stop.triggered(); },
        [&client](const kv_indexer::v1::ConfigureExpectedWorkersRequest& r,
                  kv_indexer::v1::ConfigureExpectedWorkersResponse* answer) {
          return client->Configure(r, answer);
        });
    epoch_changes_seen = shared.epochs->changes();
    return registered;
  };
  io.indexer_epoch = [&shared, &epoch_changes_seen](const std::string& epoch) {
    shared.epochs->Observe(epoch);
    epoch_changes_seen = shared.epochs->changes();
  };
  io.take_resync = [&shared, &epoch_changes_seen] {
    const uint64_t changes = shared.epochs->changes();
    if (changes == epoch_changes_seen) return false;
    epoch_changes_seen = changes;
    return true;
  };
  io.snapshot_limiter = shared.snapshot_limiter;
  // Discovery ran just now for the first synchronisation; it runs again
  // before every later one.
  bool first_sync = true;
  bool restart = false;
  if (slot->discovery) {
    io.before_sync = [slot, &entry, &first_sync, &restart] {
      if (std::exchange(first_sync, false)) return absl::OkStatus();
      absl::Status checked = slot->discovery->Recheck(entry);
      if (checked.code() == absl::StatusCode::kAborted) {
        spdlog::warn("stream {}: {}; starting the stream again", slot->name,
                     LogText(std::string(checked.message()), kLogMessageBytes));
        restart = true;
      }
      return checked;
    };
  }
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
  if (slot->stop.triggered() || restart) return absl::OkStatus();
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
  StreamExpectation expected;
  expected.stream_namespace = entry.stream_namespace;
  expected.worker_id = entry.worker_id;
  expected.dp_rank = entry.dp_rank;
  expected.model = entry.model;
  expected.hash_schema_version = entry.hash_schema_version;
  expected.page_size = entry.page_size;
  expected.is_bigram = entry.is_bigram;
  options.expected = std::move(expected);
  return options;
}

kv_indexer::v1::ConfigureExpectedWorkersRequest MultiStreamConfigure(
    const BridgeConfig& config, const std::vector<const WorkerEntry*>& entries,
    const std::vector<std::string>& generations) {
  kv_indexer::v1::ConfigureExpectedWorkersRequest request;
  for (size_t i = 0; i < entries.size(); ++i) {
    const WorkerEntry& entry = *entries[i];
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
    if (i < generations.size() && !generations[i].empty()) {
      worker->set_worker_generation(generations[i]);
    }
  }
  return request;
}

bool ListsStream(const kv_indexer::v1::ConfigureExpectedWorkersRequest& request,
                 const WorkerEntry& entry) {
  for (const kv_indexer::v1::ExpectedWorker& worker : request.workers()) {
    const kv_indexer::v1::StreamId& id = worker.stream_id();
    if (id.namespace_() == entry.stream_namespace &&
        id.worker_id() == entry.worker_id && id.dp_rank() == entry.dp_rank) {
      return true;
    }
  }
  return false;
}

bool ConfigureStream(ConfigureBroadcaster& broadcaster,
                     const WorkerEntry& entry,
                     const std::function<bool()>& stopping,
                     const ConfigureBroadcaster::Sender& send) {
  bool listed = false;
  const absl::Status sent = broadcaster.Send(
      [&](const kv_indexer::v1::ConfigureExpectedWorkersRequest& request,
          kv_indexer::v1::ConfigureExpectedWorkersResponse* answer) {
        if (stopping()) return absl::CancelledError("the stream is stopping");
        listed = ListsStream(request, entry);
        return send(request, answer);
      });
  return sent.ok() && listed;
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
  // Stable addresses. Only this thread adds slots (all_dp_ranks), under
  // slots_mu; other threads read the deque under slots_mu.
  std::deque<StreamSlot> slots;
  std::mutex slots_mu;
  std::set<std::tuple<std::string, std::string, uint32_t>> keys;
  // The Configure lists every stream that is not parked and whose entry is
  // known (discovery answered), with the generation its engine learnt.
  IndexerEpochWatch epochs;
  ConfigureBroadcaster configure(
      [this, &slots, &slots_mu] {
        std::lock_guard<std::mutex> slots_lock(slots_mu);
        std::vector<WorkerEntry> followed;
        std::vector<std::string> generations;
        for (const StreamSlot& slot : slots) {
          if (slot.supervisor->parked()) continue;
          std::lock_guard<std::mutex> lock(slot.mu);
          if (!slot.followed) continue;
          followed.push_back(*slot.followed);
          generations.push_back(slot.worker_generation);
        }
        std::vector<const WorkerEntry*> active;
        for (const WorkerEntry& entry : followed) active.push_back(&entry);
        return MultiStreamConfigure(config_, active, generations);
      },
      &epochs);
  SnapshotLimiter snapshot_limiter(config_.snapshot_concurrency);
  const SharedByStreams shared{&configure, &epochs, &snapshot_limiter};
  const auto add_slot = [&](const WorkerEntry& entry) -> StreamSlot& {
    std::lock_guard<std::mutex> lock(slots_mu);
    StreamSlot& slot = slots.emplace_back();
    keys.emplace(entry.stream_namespace, entry.worker_id, entry.dp_rank);
    slot.entry = entry;
    slot.name = DescribeStreamKey(entry);
    slot.working.state = "syncing";
    slot.published = slot.working;
    if (entry.discover) {
      slot.discovery.emplace(entry, &slot.stop, [](const WorkerUrl& url) {
        return FetchKvEventsDescriptor(url);
      });
    } else {
      slot.followed = entry;
    }
    slot.supervisor.emplace(
        slot.name,
        [this, &slot, &context, &channel, &shared] {
          return RunAttempt(config_, &slot, &context, channel, shared);
        },
        &slot.clock, park_period_);
    return slot;
  };
  for (const WorkerEntry& entry : config_.workers) add_slot(entry);
  // all_dp_ranks: once the stream of such an entry has learnt dp_size, each
  // rank without a stream gets one, discovered the same way.
  const auto expand_ranks = [&] {
    const size_t listed = slots.size();
    for (size_t i = 0; i < listed; ++i) {
      if (!slots[i].entry.all_dp_ranks) continue;
      const uint32_t dp_size = slots[i].discovery->advertised_dp_size();
      for (uint32_t rank = 0; rank < std::min(dp_size, kMaxDiscoveredRanks);
           ++rank) {
        WorkerEntry entry = slots[i].entry;
        entry.dp_rank = rank;
        entry.all_dp_ranks = false;
        if (keys.contains(std::make_tuple(entry.stream_namespace,
                                          entry.worker_id, rank))) {
          continue;
        }
        StreamSlot& added = add_slot(entry);
        spdlog::info("stream {}: following rank {} of {} advertised by {}",
                     added.name, rank, dp_size, entry.worker_address);
        added.thread = std::thread([&added] { added.supervisor->Run(); });
      }
    }
  };
  // --- Metrics endpoint (docs/metrics.md): the collector reads the copies
  // the streams publish on their ticks. Declared after `slots`, so it is
  // stopped before they go.
  std::atomic<bool> configure_unreachable{false};
  MetricsRegistry registry;
  registry.AddCollector([&slots, &slots_mu](MetricsWriter& w) {
    std::lock_guard<std::mutex> slots_lock(slots_mu);
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
    expand_ranks();
    // A stream's own Configure in flight stands for this one.
    const std::optional<absl::Status> sent = configure.TrySend(
        [&control](const kv_indexer::v1::ConfigureExpectedWorkersRequest& r,
                   kv_indexer::v1::ConfigureExpectedWorkersResponse* answer) {
          return control->Configure(r, answer);
        });
    const absl::Status status = sent.value_or(last_configure);
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
