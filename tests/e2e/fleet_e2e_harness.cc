#include "tests/e2e/fleet_e2e_harness.h"

#include <signal.h>

#include <algorithm>
#include <iterator>
#include <sstream>
#include <string_view>
#include <utility>

#include <nats/nats.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/env.h"
#include "fleet/event_log.h"
#include "fleet/fleet_config.h"
#include "fleet/jetstream_event_log.h"
#include "tests/e2e/recovery_e2e_harness.h"
#include "tests/support/grpc_probes.h"
#include "tests/support/http_get.h"
#include "tests/support/metrics_scrape.h"

#ifndef KVINDEXER_SERVER_BINARY
#error "KVINDEXER_SERVER_BINARY must name the kv-indexer-server executable"
#endif
#ifndef KVINDEXER_BRIDGE_BINARY
#error "KVINDEXER_BRIDGE_BINARY must name the kv-indexer-bridge executable"
#endif

namespace kvindexer::bridge::testing {
namespace {

namespace admin = ::kvindexer::admin::v1;
using ::kv_indexer::v1::KVIndexer;
using ::kvindexer::test_support::HttpGet;
using ::kvindexer::test_support::HttpResponse;
using ::kvindexer::test_support::ListeningServer;
using ::kvindexer::test_support::ProcessOptions;
using ::kvindexer::test_support::ScrapedValue;
using ::kvindexer::test_support::ServerProcess;
using ::kvindexer::test_support::StartListeningServer;
using ::kvindexer::test_support::WaitForMetricsPort;
using ::kvindexer::test_support::WaitUntil;

// MatchExternalKv's per-request hash limit (docs/contract.md, "Limits").
constexpr size_t kMaxHashesPerMatch = 16384;
// Hashes every worker may store (so that workers share blocks).
constexpr int64_t kSharedHashes = 200;

// Variables the processes must not inherit from the test's environment.
const std::vector<std::string>& InheritedVariablesToDrop() {
  static const std::vector<std::string> names = {
      "KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT",
      "KV_INDEXER_BACKEND",
      "KV_INDEXER_BACKEND_PATH",
      "KV_INDEXER_LOG_LEVEL",
      "KV_INDEXER_DATA_DIR",
      "KV_INDEXER_LIVENESS",
      "KV_INDEXER_LIVENESS_SWEEP_MS",
      "KV_INDEXER_METRICS_ADDR",
      "KV_INDEXER_WRITE_TOKEN",
      "KV_INDEXER_EVENT_SOURCE",
      "KV_INDEXER_FLEET_MAX_LAG_RECORDS",
      "KV_INDEXER_FLEET_MAX_SILENCE_MS",
      "KV_INDEXER_FLEET_SNAPSHOT_INTERVAL_MS",
      "KV_INDEXER_FLEET_SNAPSHOT_KEEP",
      "KV_INDEXER_FLEET_LEASE_TTL_MS",
      fleet::kNatsUrlVar,
      fleet::kNatsCredsFileVar,
      fleet::kNatsTokenFileVar,
      fleet::kNatsTlsCaFileVar,
      fleet::kNatsTlsCertFileVar,
      fleet::kNatsTlsKeyFileVar,
      fleet::kNatsStreamVar,
      fleet::kNatsSubjectPrefixVar,
      fleet::kNatsReplicasVar,
      fleet::kNatsDedupWindowVar,
      fleet::kNatsTimeoutVar,
      "KV_INDEXER_ENDPOINT",
      "KV_INDEXER_SINK",
      "KV_INDEXER_CLEAR_TIERS",
      "KV_INDEXER_CACHE_COMPONENTS",
      "KV_INDEXER_SWA_WINDOW_TOKENS",
      "KV_INDEXER_FULL_TIERS",
      "KV_INDEXER_SWA_TIERS",
      "KV_INDEXER_MAMBA_TIERS",
      "KV_INDEXER_CACHE_SPEC_VERSION",
      "KV_INDEXER_LIVE_BUFFER_BATCHES",
      "KV_INDEXER_WORKERS_JSON",
      "KV_INDEXER_BRIDGE_METRICS_ADDR",
      "SGLANG_KV_EVENT_TOPIC",
      "SGLANG_KV_REPLAY_ENDPOINT",
      "SGLANG_KV_SNAPSHOT_ENDPOINT",
  };
  return names;
}

std::unique_ptr<grpc::ClientContext> Context(
    std::chrono::milliseconds timeout = 5s) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + timeout);
  return context;
}

std::optional<double> ScrapeSample(int port, const std::string& series) {
  if (port == 0) return std::nullopt;
  absl::StatusOr<HttpResponse> scrape = HttpGet(port, "/metrics", 2s);
  if (!scrape.ok() || scrape->status != 200) return std::nullopt;
  return ScrapedValue(scrape->body, series);
}

uint64_t Fnv1a64(std::string_view text) {
  uint64_t hash = 14695981039346656037ull;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

// worker id -> tier -> hashes held.
using Placements = std::map<std::string, std::map<int, std::set<int64_t>>>;

std::optional<Placements> QueryPlacements(
    KVIndexer::Stub& stub, const std::vector<int64_t>& universe) {
  Placements out;
  for (size_t begin = 0; begin < universe.size(); begin += kMaxHashesPerMatch) {
    kv_indexer::v1::MatchExternalKvRequest req;
    const size_t end = std::min(universe.size(), begin + kMaxHashesPerMatch);
    for (size_t i = begin; i < end; ++i) req.add_hashes(universe[i]);
    kv_indexer::v1::MatchExternalKvResponse resp;
    if (!stub.MatchExternalKv(Context().get(), req, &resp).ok()) {
      return std::nullopt;
    }
    for (const auto& match : resp.matches()) {
      for (const auto& tier : match.hashes_by_tier()) {
        out[match.worker_id()][tier.tier()].insert(tier.hashes().begin(),
                                                   tier.hashes().end());
      }
    }
  }
  return out;
}

void RenderPlacement(std::string& out, const std::string& worker_id, int tier,
                     const std::set<int64_t>& hashes) {
  if (hashes.empty()) return;
  absl::StrAppend(&out, "place ", worker_id, " ",
                  kv_indexer::v1::TierType_Name(tier), " ",
                  absl::StrJoin(hashes, ","), "\n");
}

constexpr char kWorkerLinePrefix[] = "worker ";

}  // namespace

std::map<std::string, std::string> FleetLogEnv(const FleetLogTarget& log) {
  return {{fleet::kNatsUrlVar, log.urls},
          {fleet::kNatsReplicasVar, std::to_string(log.replicas)},
          {fleet::kNatsTimeoutVar, std::to_string(log.timeout_ms)}};
}

namespace {

absl::StatusOr<fleet::LogBounds> FleetLogBounds(const FleetLogTarget& log) {
  const std::map<std::string, std::string> vars = FleetLogEnv(log);
  absl::StatusOr<fleet::EventLogConfig> config = fleet::ParseEventLogConfig(
      MapEnvironment(std::map<std::string, std::string, std::less<>>(
          vars.begin(), vars.end())));
  if (!config.ok()) return config.status();
  absl::StatusOr<std::unique_ptr<fleet::EventLog>> opened =
      fleet::OpenJetStreamEventLog(*config);
  if (!opened.ok()) return opened.status();
  return (*opened)->Bounds();
}

}  // namespace

absl::StatusOr<uint64_t> FleetLogEnd(const FleetLogTarget& log) {
  absl::StatusOr<fleet::LogBounds> bounds = FleetLogBounds(log);
  if (!bounds.ok()) return bounds.status();
  return bounds->last;
}

absl::StatusOr<uint64_t> FleetLogFirst(const FleetLogTarget& log) {
  absl::StatusOr<fleet::LogBounds> bounds = FleetLogBounds(log);
  if (!bounds.ok()) return bounds.status();
  return bounds->first;
}

absl::StatusOr<std::string> FleetStreamLeader(const FleetLogTarget& log) {
  natsConnection* connection = nullptr;
  if (natsConnection_ConnectTo(&connection, log.urls.c_str()) != NATS_OK) {
    natsConnection_Destroy(connection);
    return absl::UnavailableError("cannot connect to NATS to find the leader");
  }
  jsCtx* js = nullptr;
  jsStreamInfo* info = nullptr;
  std::string leader;
  // The stream's name is the default of KV_INDEXER_NATS_STREAM.
  const std::string stream = fleet::EventLogConfig().stream;
  if (natsConnection_JetStream(&js, connection, nullptr) == NATS_OK &&
      js_GetStreamInfo(&info, js, stream.c_str(), nullptr, nullptr) ==
          NATS_OK &&
      info->Cluster != nullptr && info->Cluster->Leader != nullptr) {
    leader = info->Cluster->Leader;
  }
  jsStreamInfo_Destroy(info);
  jsCtx_Destroy(js);
  natsConnection_Destroy(connection);
  if (leader.empty()) return absl::UnavailableError("the stream has no leader");
  return leader;
}

// --- FleetReplica

absl::StatusOr<std::unique_ptr<FleetReplica>> FleetReplica::Start(
    const FleetLogTarget& log, std::map<std::string, std::string> extra_env) {
  auto replica = std::unique_ptr<FleetReplica>(new FleetReplica());
  ProcessOptions options;
  options.binary = KVINDEXER_SERVER_BINARY;
  options.unset_env = InheritedVariablesToDrop();
  options.env = FleetLogEnv(log);
  options.env["KV_INDEXER_EVENT_SOURCE"] = "jetstream";
  options.env["KV_INDEXER_METRICS_ADDR"] = "127.0.0.1:0";
  for (auto& [k, v] : extra_env) options.env[k] = std::move(v);
  absl::StatusOr<ListeningServer> listening =
      StartListeningServer(std::move(options), /*port=*/0, kFleetBound);
  if (!listening.ok()) return listening.status();
  replica->process_ = std::move(listening->process);
  replica->metrics_port_ = WaitForMetricsPort(*replica->process_, kFleetBound);
  if (replica->metrics_port_ == 0) {
    return absl::DeadlineExceededError(
        absl::StrCat("the replica logged no metrics address:\n",
                     replica->process_->Output()));
  }
  replica->channel_ = grpc::CreateChannel(listening->address,
                                          grpc::InsecureChannelCredentials());
  replica->stub_ = KVIndexer::NewStub(replica->channel_);
  replica->admin_ = admin::KvIndexerAdmin::NewStub(replica->channel_);
  const bool answers = WaitUntil(
      [&] {
        kv_indexer::v1::MatchExternalKvRequest req;
        req.add_hashes(0);
        kv_indexer::v1::MatchExternalKvResponse resp;
        return replica->stub_->MatchExternalKv(Context(1s).get(), req, &resp)
            .ok();
      },
      kFleetBound, 20ms);
  if (!answers) {
    return absl::DeadlineExceededError(absl::StrCat(
        "the replica answers no queries:\n", replica->process_->Output()));
  }
  return replica;
}

std::optional<double> FleetReplica::Metric(const std::string& series) {
  return ScrapeSample(metrics_port_, series);
}

std::optional<uint64_t> FleetReplica::AppliedPosition() {
  const std::optional<double> value =
      Metric("kvindexer_fleet_applied_position");
  if (!value.has_value()) return std::nullopt;
  return static_cast<uint64_t>(*value);
}

uint64_t FleetReplica::Health() {
  const test_support::HealthAnswer answer =
      test_support::CheckHealth(channel_, "", 2s);
  return answer.code == grpc::StatusCode::OK ? answer.status
                                             : test_support::kHealthUnknown;
}

absl::StatusOr<HttpResponse> FleetReplica::Readyz() {
  return HttpGet(metrics_port_, "/readyz", 2s);
}

std::optional<std::string> FleetReplica::StatsHealth() {
  admin::GetStatsResponse stats;
  if (!admin_->GetStats(Context().get(), admin::GetStatsRequest{}, &stats)
           .ok()) {
    return std::nullopt;
  }
  return stats.health();
}

std::optional<admin::GetStatsResponse> FleetReplica::Stats() {
  admin::GetStatsResponse stats;
  if (!admin_->GetStats(Context().get(), admin::GetStatsRequest{}, &stats)
           .ok()) {
    return std::nullopt;
  }
  return stats;
}

std::optional<std::set<int64_t>> FleetReplica::Held(
    const std::string& worker_id, const std::vector<int64_t>& universe) {
  const std::optional<Placements> placements =
      QueryPlacements(*stub_, universe);
  if (!placements.has_value()) return std::nullopt;
  auto worker = placements->find(worker_id);
  if (worker == placements->end()) return std::set<int64_t>();
  auto hbm = worker->second.find(kv_indexer::v1::TIER_HBM);
  if (hbm == worker->second.end()) return std::set<int64_t>();
  return hbm->second;
}

std::optional<admin::ListWorkersResponse> FleetReplica::ListWorkers() {
  admin::ListWorkersResponse resp;
  if (!admin_->ListWorkers(Context().get(), admin::ListWorkersRequest{}, &resp)
           .ok()) {
    return std::nullopt;
  }
  return resp;
}

std::optional<ReplicaDigest> FleetReplica::Digest(
    const std::vector<int64_t>& universe) {
  const std::optional<Placements> placements =
      QueryPlacements(*stub_, universe);
  const std::optional<admin::ListWorkersResponse> listed = ListWorkers();
  if (!placements.has_value() || !listed.has_value()) return std::nullopt;
  ReplicaDigest digest;
  for (const auto& [worker_id, tiers] : *placements) {
    for (const auto& [tier, hashes] : tiers) {
      RenderPlacement(digest.text, worker_id, tier, hashes);
    }
  }
  std::vector<const admin::WorkerInfo*> workers;
  for (const admin::WorkerInfo& w : listed->workers()) workers.push_back(&w);
  std::sort(workers.begin(), workers.end(),
            [](const admin::WorkerInfo* a, const admin::WorkerInfo* b) {
              return a->worker_id() < b->worker_id();
            });
  for (const admin::WorkerInfo* w : workers) {
    std::vector<std::string> counts;
    for (const admin::TierPlacementCount& c : w->placements()) {
      counts.push_back(absl::StrCat(kv_indexer::v1::TierType_Name(c.tier()),
                                    ":", c.placements()));
    }
    std::sort(counts.begin(), counts.end());
    // The ages and the heartbeat deadline depend on when the call is made;
    // everything else follows from the log alone.
    std::ostringstream line;
    line << kWorkerLinePrefix << w->worker_id()
         << " address=" << w->worker_address()
         << " state=" << admin::SequenceState_Name(w->sequence_state())
         << " epoch=" << w->worker_epoch()
         << " applied_seq=" << w->applied_seq() << " ready=" << w->ready()
         << " configured=" << w->configured()
         << " fidelity=" << admin::Fidelity_Name(w->fidelity()) << " reason=\""
         << w->fidelity_reason()
         << "\" heartbeat_marked=" << w->heartbeat_marked()
         << " heartbeat_ttl_ms=" << w->heartbeat_ttl_ms() << " spec="
         << (w->has_cache_spec() ? w->cache_spec().ShortDebugString() : "")
         << " placements=" << absl::StrJoin(counts, ",")
         << " counts_known=" << w->placement_counts_known() << "\n";
    digest.text += line.str();
  }
  digest.hash = Fnv1a64(digest.text);
  return digest;
}

std::string FirstDifference(const ReplicaDigest& a, const ReplicaDigest& b) {
  const std::vector<std::string> la = absl::StrSplit(a.text, '\n');
  const std::vector<std::string> lb = absl::StrSplit(b.text, '\n');
  constexpr size_t kShown = 300;
  auto shown = [](const std::string& line) {
    return line.size() <= kShown ? line
                                 : absl::StrCat(line.substr(0, kShown), "...");
  };
  for (size_t i = 0; i < std::max(la.size(), lb.size()); ++i) {
    const std::string x = i < la.size() ? la[i] : "<none>";
    const std::string y = i < lb.size() ? lb[i] : "<none>";
    if (x != y) {
      return absl::StrCat("line ", i + 1, ":\n  ", shown(x), "\n  ", shown(y));
    }
  }
  return "no difference";
}

std::string ModelPlacements(
    const std::vector<std::unique_ptr<FleetWorker>>& workers) {
  std::map<std::string, std::set<int64_t>> held;
  for (const auto& w : workers) held[w->id()] = w->model();
  std::string out;
  for (const auto& [worker_id, hashes] : held) {
    RenderPlacement(out, worker_id, kv_indexer::v1::TIER_HBM, hashes);
  }
  return out;
}

std::string PlacementPart(const ReplicaDigest& digest) {
  std::string out;
  const std::vector<std::string> lines = absl::StrSplit(digest.text, '\n');
  for (const std::string& line : lines) {
    if (line.empty() || line.rfind(kWorkerLinePrefix, 0) == 0) continue;
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

// --- FleetWorker

FleetWorker::FleetWorker(int index, uint64_t seed)
    : index_(index),
      id_(absl::StrCat("fleet-w", index)),
      address_(absl::StrCat("http://127.0.0.1:", 31000 + index)),
      publisher_(FakeSglangPublisher::Options{}),
      rng_(seed) {}

FleetWorker::~FleetWorker() {
  if (bridge_ != nullptr && bridge_->Running()) bridge_->Kill();
}

absl::Status FleetWorker::StartBridge(
    const FleetLogTarget& log, std::map<std::string, std::string> extra_env) {
  ProcessOptions options;
  options.binary = KVINDEXER_BRIDGE_BINARY;
  options.unset_env = InheritedVariablesToDrop();
  options.env = FleetLogEnv(log);
  options.env["KV_INDEXER_SINK"] = "jetstream";
  options.env["KV_INDEXER_WORKER_ID"] = id_;
  options.env["KV_INDEXER_WORKER_ADDRESS"] = address_;
  options.env["SGLANG_KV_EVENT_ENDPOINT"] = publisher_.pub_endpoint();
  options.env["SGLANG_KV_REPLAY_ENDPOINT"] = publisher_.replay_endpoint();
  options.env["KV_INDEXER_SEQUENCE_GATE"] = "on";
  options.env["KV_INDEXER_HEARTBEAT_TTL_MS"] = "0";
  options.env["KV_INDEXER_STATS_INTERVAL_SECS"] = "1";
  options.env["KV_INDEXER_LOG_LEVEL"] = "info";
  options.env["KV_INDEXER_BRIDGE_METRICS_ADDR"] = "127.0.0.1:0";
  for (auto& [k, v] : extra_env) options.env[k] = std::move(v);

  const size_t subscriptions_before = publisher_.subscriptions();
  absl::StatusOr<std::unique_ptr<ServerProcess>> process =
      ServerProcess::Start(std::move(options));
  if (!process.ok()) return process.status();
  bridge_ = *std::move(process);
  const bool subscribed = WaitUntil(
      [&] {
        return publisher_.subscriptions() > subscriptions_before ||
               !bridge_->Running();
      },
      kFleetBound);
  if (!subscribed || !bridge_->Running()) {
    return absl::DeadlineExceededError(absl::StrCat(
        "bridge ", id_, " never subscribed:\n", bridge_->Output()));
  }
  bridge_metrics_port_ = WaitForMetricsPort(*bridge_, kFleetBound);
  if (bridge_metrics_port_ == 0) {
    return absl::DeadlineExceededError(absl::StrCat(
        "bridge ", id_, " logged no metrics address:\n", bridge_->Output()));
  }
  return absl::OkStatus();
}

std::optional<double> FleetWorker::BridgeMetric(const std::string& series) {
  return ScrapeSample(bridge_metrics_port_, series);
}

absl::Status FleetWorker::StopBridge() {
  if (bridge_ == nullptr) return absl::OkStatus();
  bridge_->Signal(SIGTERM);
  const std::optional<test_support::ExitStatus> exit =
      bridge_->WaitForExit(kFleetBound);
  if (!exit.has_value() ||
      !test_support::EndedCleanly(*exit, bridge_->Output())) {
    return absl::InternalError(absl::StrCat(
        "bridge ", id_, " did not stop cleanly (",
        exit ? exit->ToString() : "still running", "):\n", bridge_->Output()));
  }
  return absl::OkStatus();
}

int64_t FleetWorker::FreshHashLocked() {
  return (static_cast<int64_t>(index_ + 1) << 32) |
         static_cast<int64_t>(next_fresh_++);
}

void FleetWorker::PublishLocked(const std::vector<int64_t>& stores,
                                const std::vector<int64_t>& removes) {
  Events events;
  if (!stores.empty()) events.push_back(Store(stores));
  if (!removes.empty()) events.push_back(Remove(removes));
  Fold(held_, events);
  used_.insert(stores.begin(), stores.end());
  used_.insert(removes.begin(), removes.end());
  ++batches_;
  publisher_.Publish(Payload(events));
}

void FleetWorker::PublishRandomBatch() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int64_t> stores;
  const int fresh = 1 + static_cast<int>(rng_() % 6);
  for (int i = 0; i < fresh; ++i) stores.push_back(FreshHashLocked());
  if (rng_() % 3 == 0) {
    stores.push_back(1 + static_cast<int64_t>(rng_() % kSharedHashes));
  }
  std::vector<int64_t> removes;
  if (!held_.empty() && rng_() % 2 == 0) {
    const int count = 1 + static_cast<int>(rng_() % 3);
    for (int i = 0; i < count; ++i) {
      auto it = held_.begin();
      std::advance(it, static_cast<ptrdiff_t>(rng_() % held_.size()));
      removes.push_back(*it);
    }
  }
  PublishLocked(stores, removes);
}

void FleetWorker::PublishSeal() {
  std::lock_guard<std::mutex> lock(mu_);
  PublishLocked({FreshHashLocked(), FreshHashLocked()}, {});
}

std::set<int64_t> FleetWorker::model() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

std::set<int64_t> FleetWorker::used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

uint64_t FleetWorker::batches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return batches_;
}

std::vector<int64_t> Universe(
    const std::vector<std::unique_ptr<FleetWorker>>& workers) {
  std::set<int64_t> all;
  for (const auto& w : workers) {
    const std::set<int64_t> used = w->used();
    all.insert(used.begin(), used.end());
  }
  return std::vector<int64_t>(all.begin(), all.end());
}

// --- TrafficStreamer

TrafficStreamer::TrafficStreamer(std::vector<FleetWorker*> workers,
                                 std::chrono::milliseconds pace)
    : workers_(std::move(workers)) {
  thread_ = std::thread([this, pace] {
    while (!stop_.load()) {
      for (FleetWorker* w : workers_) w->PublishRandomBatch();
      rounds_.fetch_add(1);
      std::this_thread::sleep_for(pace);
    }
  });
}

TrafficStreamer::~TrafficStreamer() { Stop(); }

void TrafficStreamer::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

// --- waits

absl::Status WaitForApplied(FleetReplica& replica, uint64_t position) {
  std::optional<uint64_t> applied;
  if (WaitUntil(
          [&] {
            applied = replica.AppliedPosition();
            return applied.has_value() && *applied >= position;
          },
          kFleetBound, 20ms)) {
    return absl::OkStatus();
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "the replica applied ",
      applied.has_value() ? std::to_string(*applied) : "<no scrape>",
      " of the log's ", position, " records:\n", replica.process().Output()));
}

absl::StatusOr<uint64_t> WaitForModel(
    const FleetLogTarget& log, FleetReplica& replica,
    const std::vector<std::unique_ptr<FleetWorker>>& workers) {
  for (const auto& w : workers) w->PublishSeal();
  const std::vector<int64_t> universe = Universe(workers);
  std::string missing;
  const bool held = WaitUntil(
      [&] {
        for (const auto& w : workers) {
          const std::optional<std::set<int64_t>> got =
              replica.Held(w->id(), universe);
          const std::set<int64_t> want = w->model();
          if (!got.has_value() || *got != want) {
            missing = absl::StrCat(
                w->id(), ": the replica holds ",
                got.has_value() ? std::to_string(got->size()) : "<no answer>",
                " hashes, the model ", want.size());
            return false;
          }
        }
        return true;
      },
      kFleetBound, 50ms);
  if (!held) {
    std::string bridges;
    for (const auto& w : workers) {
      if (w->bridge() != nullptr) {
        absl::StrAppend(&bridges, "--- bridge ", w->id(), "\n",
                        w->bridge()->Output());
      }
    }
    return absl::DeadlineExceededError(
        absl::StrCat("the replica never held the model (", missing, ")\n",
                     bridges, "--- replica\n", replica.process().Output()));
  }
  absl::StatusOr<uint64_t> end = FleetLogEnd(log);
  if (!end.ok()) return end.status();
  if (absl::Status s = WaitForApplied(replica, *end); !s.ok()) return s;
  return *end;
}

}  // namespace kvindexer::bridge::testing
