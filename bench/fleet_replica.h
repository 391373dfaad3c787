// The servers of kv-indexer-fleet-bench: a kv-indexer-server replica
// (KV_INDEXER_EVENT_SOURCE=jetstream, docs/fleet.md) spawned on free
// 127.0.0.1 ports with its metrics endpoint on, what it reports about its
// place in the log (kvindexer_fleet_applied_position and the snapshot
// gauges), its grpc.health.v1 status, and the JetStream stream bytes that
// nats-server's monitoring endpoint (/jsz) reports.
//
// Thread safety: a FleetReplica is driven by one thread; its pool may be
// used from any thread (load_client.h).
#ifndef KVINDEXER_BENCH_FLEET_REPLICA_H_
#define KVINDEXER_BENCH_FLEET_REPLICA_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "load_client.h"
#include "tests/support/server_process.h"

namespace kvindexer::bench {

struct ReplicaOptions {
  std::string server_binary;
  std::string backend;     // KV_INDEXER_BACKEND; empty: the server's default
  std::string server_log;  // appended to; empty: a temporary file
  std::string nats_url;    // KV_INDEXER_NATS_URL
  std::string stream;      // KV_INDEXER_NATS_STREAM
  // KV_INDEXER_NATS_SUBJECT_PREFIX: streams of one server may not share
  // subjects, so each stream of the bench has its own.
  std::string subject_prefix;
  // KV_INDEXER_FLEET_SNAPSHOT_INTERVAL_MS; 0: this replica writes none.
  uint32_t snapshot_interval_ms = 0;
  uint32_t channels = 4;
  std::chrono::milliseconds start_timeout = std::chrono::minutes(10);
};

// What a replica logged about the snapshot it started from ("loaded fleet
// snapshot ... position= parts= bytes= ... seconds=").
struct LoadedSnapshotLine {
  uint64_t position = 0;
  uint64_t parts = 0;
  uint64_t bytes = 0;
  double seconds = 0;
};

class FleetReplica {
 public:
  // Spawns the replica and waits for its "listening" line, then connects.
  static absl::StatusOr<std::unique_ptr<FleetReplica>> Start(
      const ReplicaOptions& options);

  ChannelPool* pool() { return pool_.get(); }
  test_support::ServerProcess& process() { return *process_; }
  const std::string& address() const { return address_; }
  // When the process was spawned, and how long it took to listen.
  std::chrono::steady_clock::time_point spawned_at() const {
    return spawned_at_;
  }
  double seconds_to_listen() const { return seconds_to_listen_; }
  std::optional<LoadedSnapshotLine> loaded_snapshot() const;

  // grpc.health.v1 of the whole server is SERVING.
  bool Serving();
  // A gauge or counter of /metrics (e.g. "kvindexer_fleet_applied_position");
  // nullopt when the scrape fails or the series is absent.
  std::optional<double> Metric(const std::string& series);

  // SIGTERM, and the exit status must be 0.
  absl::Status Stop();

 private:
  FleetReplica() = default;
  std::unique_ptr<test_support::ServerProcess> process_;
  std::unique_ptr<ChannelPool> pool_;
  std::shared_ptr<grpc::Channel> health_channel_;
  std::string address_;
  int metrics_port_ = 0;
  std::chrono::steady_clock::time_point spawned_at_;
  double seconds_to_listen_ = 0;
};

// The bytes and messages JetStream holds for `stream`, from the monitoring
// endpoint of the nats-server on 127.0.0.1:`monitor_port`.
struct StreamUsage {
  uint64_t bytes = 0;
  uint64_t messages = 0;
};
[[nodiscard]] absl::StatusOr<StreamUsage> ReadStreamUsage(
    int monitor_port, const std::string& stream);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_FLEET_REPLICA_H_
