// The pieces fleet_e2e_test.cc drives (docs/fleet.md): real
// kv-indexer-server replicas following the event log on NATS JetStream
// (KV_INDEXER_EVENT_SOURCE=jetstream), real kv-indexer-bridge processes
// writing to it (KV_INDEXER_SINK=jetstream), each fed by a
// FakeSglangPublisher, the traffic the publishers send with a model of
// what every worker holds after it, and a digest of a replica's contents
// to compare replicas with each other and with that model.
//
// The NATS servers themselves come from tests/support/nats_server.h.
//
// Everything here waits in bounded loops; a wait that runs out returns a
// failure value (with the processes' output in the message where useful).
//
// Thread safety: FleetWorker's Publish* and model accessors may be called
// from any thread (TrafficStreamer publishes from its own); everything else
// is used by the test's main thread only.
#ifndef KVINDEXER_TESTS_E2E_FLEET_E2E_HARNESS_H_
#define KVINDEXER_TESTS_E2E_FLEET_E2E_HARNESS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "kv_indexer.grpc.pb.h"
#include "kvindexer_admin.grpc.pb.h"
#include "tests/support/fake_sglang_publisher.h"
#include "tests/support/http_get.h"
#include "tests/support/server_process.h"

namespace kvindexer::bridge::testing {

using namespace std::chrono_literals;

// Upper bound of the waits for a process to start or for an effect to show
// (normally milliseconds; the machine may be busy).
inline constexpr std::chrono::milliseconds kFleetBound = 20s;

// Where the fleet's event log lives: the KV_INDEXER_NATS_* values every
// replica and bridge of a test gets.
struct FleetLogTarget {
  std::string urls;       // comma-separated nats:// URLs
  uint32_t replicas = 1;  // KV_INDEXER_NATS_REPLICAS
  // KV_INDEXER_NATS_TIMEOUT_MS: short, so that a call to a hung or dead
  // server fails (and is retried) quickly.
  uint32_t timeout_ms = 2000;
};

// The KV_INDEXER_NATS_* variables for `log`.
std::map<std::string, std::string> FleetLogEnv(const FleetLogTarget& log);

// The log's last position (EventLog::Bounds().last), read over a
// connection of the test's own.
absl::StatusOr<uint64_t> FleetLogEnd(const FleetLogTarget& log);
// The log's first position still held (Bounds().first).
absl::StatusOr<uint64_t> FleetLogFirst(const FleetLogTarget& log);

// What a replica holds, rendered canonically: every placement among the
// universe (MatchExternalKv, worker by worker and tier by tier, sorted) and
// the sequence state of every worker (ListWorkers, sorted by worker id; the
// fields that depend on time left out); `hash` is FNV-1a 64 of `text`.
struct ReplicaDigest {
  std::string text;
  uint64_t hash = 0;
};
// The server name of the log stream's leader in a NATS cluster ("n1".."n3"
// with test_support::NatsCluster), asked over a connection of the test's
// own.
absl::StatusOr<std::string> FleetStreamLeader(const FleetLogTarget& log);

// A kv-indexer-server replica of the log, with its metrics endpoint on.
class FleetReplica {
 public:
  // Starts a replica and waits until it answers queries; the start does not
  // wait for it to catch up. `extra_env` is applied last. An error quotes
  // the server's output.
  static absl::StatusOr<std::unique_ptr<FleetReplica>> Start(
      const FleetLogTarget& log,
      std::map<std::string, std::string> extra_env = {});

  test_support::ServerProcess& process() { return *process_; }
  // SIGKILL, then reap: a crash.
  void Kill() { process_->Kill(); }

  // One sample of /metrics (`series` exactly as the server writes it);
  // nullopt when the scrape fails or the sample is absent.
  std::optional<double> Metric(const std::string& series);
  // kvindexer_fleet_applied_position.
  std::optional<uint64_t> AppliedPosition();
  // grpc.health.v1 status of the whole server (test_support::kHealth*);
  // kHealthUnknown when the call fails.
  uint64_t Health();
  // GET /readyz on the metrics endpoint.
  absl::StatusOr<test_support::HttpResponse> Readyz();
  // The health admin GetStats reports ("SERVING" or "NOT_SERVING");
  // nullopt when the call fails.
  std::optional<std::string> StatsHealth();

  // The hashes among `universe` that `worker_id` holds at HBM; nullopt
  // when a query fails. Queried in chunks of at most 16384 hashes.
  std::optional<std::set<int64_t>> Held(const std::string& worker_id,
                                        const std::vector<int64_t>& universe);
  // admin GetStats; nullopt when the call fails.
  std::optional<::kvindexer::admin::v1::GetStatsResponse> Stats();
  // The KVIndexer service of this replica, for calls a test makes itself.
  ::kv_indexer::v1::KVIndexer::Stub& stub() { return *stub_; }
  // admin ListWorkers; nullopt when the call fails.
  std::optional<::kvindexer::admin::v1::ListWorkersResponse> ListWorkers();
  // The digest of what the replica holds among `universe`; nullopt when a
  // call fails.
  std::optional<ReplicaDigest> Digest(const std::vector<int64_t>& universe);

 private:
  FleetReplica() = default;
  std::unique_ptr<test_support::ServerProcess> process_;
  int metrics_port_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<::kv_indexer::v1::KVIndexer::Stub> stub_;
  std::unique_ptr<::kvindexer::admin::v1::KvIndexerAdmin::Stub> admin_;
};

// The first line where two digests differ, both versions (for messages).
std::string FirstDifference(const ReplicaDigest& a, const ReplicaDigest& b);

// One SGLang worker: its publisher, the bridge that writes it to the log,
// and the model of what it holds after everything published so far.
class FleetWorker {
 public:
  // Worker "fleet-w<index>" at http://127.0.0.1:<31000+index>; the random
  // traffic is drawn from `seed`.
  FleetWorker(int index, uint64_t seed);
  ~FleetWorker();
  FleetWorker(const FleetWorker&) = delete;
  FleetWorker& operator=(const FleetWorker&) = delete;

  const std::string& id() const { return id_; }
  const std::string& address() const { return address_; }
  FakeSglangPublisher& publisher() { return publisher_; }

  // Starts kv-indexer-bridge with KV_INDEXER_SINK=jetstream toward `log`
  // (gated, with the publisher's replay endpoint, no heartbeats, its
  // metrics endpoint on) and waits until it has subscribed at the
  // publisher. An error quotes the bridge's output.
  absl::Status StartBridge(const FleetLogTarget& log,
                           std::map<std::string, std::string> extra_env = {});
  // nullptr before StartBridge.
  test_support::ServerProcess* bridge() { return bridge_.get(); }
  // One sample of the bridge's /metrics; nullopt when unavailable.
  std::optional<double> BridgeMetric(const std::string& series);
  // SIGTERM; OK when the bridge exits cleanly within the bound.
  absl::Status StopBridge();

  // Publishes one random batch: stores of fresh and of shared hashes, and
  // removals of held ones.
  void PublishRandomBatch();
  // Publishes a batch that stores only hashes never used before. Once a
  // replica holds model() after this, it has applied every batch of this
  // worker: no earlier state holds them.
  void PublishSeal();

  std::set<int64_t> model() const;
  // Every hash this worker's batches named.
  std::set<int64_t> used() const;
  uint64_t batches() const;

 private:
  void PublishLocked(const std::vector<int64_t>& stores,
                     const std::vector<int64_t>& removes);
  int64_t FreshHashLocked();

  const int index_;
  const std::string id_;
  const std::string address_;
  FakeSglangPublisher publisher_;
  std::unique_ptr<test_support::ServerProcess> bridge_;
  int bridge_metrics_port_ = 0;

  mutable std::mutex mu_;
  std::mt19937_64 rng_;      // guarded by mu_
  uint64_t next_fresh_ = 1;  // guarded by mu_
  std::set<int64_t> held_;   // guarded by mu_
  std::set<int64_t> used_;   // guarded by mu_
  uint64_t batches_ = 0;     // guarded by mu_
};

// Every hash any of `workers` used, sorted: what digests query.
std::vector<int64_t> Universe(
    const std::vector<std::unique_ptr<FleetWorker>>& workers);

// The placement part of a digest as the model predicts it: what `workers`
// hold (model()), rendered as Digest renders placements.
std::string ModelPlacements(
    const std::vector<std::unique_ptr<FleetWorker>>& workers);
// The placement part of a digest (its lines before the worker lines).
std::string PlacementPart(const ReplicaDigest& digest);

// Publishes random batches for every worker from a thread of its own, one
// round every `pace`, until Stop. The pace only shapes the load; nothing
// waits on it.
class TrafficStreamer {
 public:
  TrafficStreamer(std::vector<FleetWorker*> workers,
                  std::chrono::milliseconds pace = 4ms);
  ~TrafficStreamer();  // Stop()
  TrafficStreamer(const TrafficStreamer&) = delete;
  TrafficStreamer& operator=(const TrafficStreamer&) = delete;

  uint64_t rounds() const { return rounds_.load(); }
  // Joins the thread. Idempotent.
  void Stop();

 private:
  std::vector<FleetWorker*> workers_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> rounds_{0};
  std::thread thread_;
};

// Seals every worker (PublishSeal), then waits until `replica` holds every
// worker's model and has applied the log's last position; returns that
// position. An error says what was missing.
absl::StatusOr<uint64_t> WaitForModel(
    const FleetLogTarget& log, FleetReplica& replica,
    const std::vector<std::unique_ptr<FleetWorker>>& workers);
// Waits until `replica` has applied at least `position`.
absl::Status WaitForApplied(FleetReplica& replica, uint64_t position);

}  // namespace kvindexer::bridge::testing

#endif  // KVINDEXER_TESTS_E2E_FLEET_E2E_HARNESS_H_
