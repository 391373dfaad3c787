// Where the server's writes come from (docs/fleet.md, "Replicas follow the
// log"):
//
// | Variable                         | Default | Accepted values          |
// | KV_INDEXER_EVENT_SOURCE          | grpc    | grpc or jetstream        |
// | KV_INDEXER_FLEET_MAX_LAG_RECORDS | 10000   | integer 1..4294967295    |
// | KV_INDEXER_FLEET_MAX_SILENCE_MS  | 10000   | 0, or 500..86400000      |
// | KV_INDEXER_FLEET_LINE_A_WRITES   | 1       | 0 or 1                   |
// | KV_INDEXER_FLEET_OPEN_ATTEMPTS   | 6       | integer 1..20            |
//
// grpc: clients (the bridges) call the mutations, as in a single server.
// jetstream: the server is a replica of the fleet event log. It applies the
// log's records in order (replica/log_follower.h), writes line-A writes
// through to the log (replica/write_through.h; 0 for
// KV_INDEXER_FLEET_LINE_A_WRITES refuses them too), refuses the other
// mutation RPCs (replica/replica_refusal.h), and reports NOT_SERVING while it
// lags the log by more than KV_INDEXER_FLEET_MAX_LAG_RECORDS, and while the log
// has not answered it for more than KV_INDEXER_FLEET_MAX_SILENCE_MS (0: never
// for that reason; replica/log_silence.h). The log's variables
// (KV_INDEXER_NATS_*) are read only then (fleet/fleet_config.h). At start a
// replica tries KV_INDEXER_FLEET_OPEN_ATTEMPTS times to open the log while
// NATS answers UNAVAILABLE, waiting 0.5 s, then twice as long each time,
// between tries (fleet/jetstream_fleet.h); then it exits.
//
// KV_INDEXER_FLEET_SNAPSHOT_INTERVAL_MS, KV_INDEXER_FLEET_SNAPSHOT_KEEP and
// KV_INDEXER_FLEET_LEASE_TTL_MS: replica/snapshot_config.h.
//
// KV_INDEXER_FLEET_MAX_LAG_RECORDS and KV_INDEXER_FLEET_MAX_SILENCE_MS are
// checked in either mode: a bad value is a configuration error either way.
// jetstream with KV_INDEXER_DATA_DIR set is refused (LoadServerConfig): a
// replica's state comes from the log alone.
#ifndef KVINDEXER_REPLICA_EVENT_SOURCE_CONFIG_H_
#define KVINDEXER_REPLICA_EVENT_SOURCE_CONFIG_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/env.h"
#include "fleet/fleet_config.h"
#include "replica/snapshot_config.h"

namespace kvindexer::replica {

inline constexpr std::string_view kEventSourceVar = "KV_INDEXER_EVENT_SOURCE";
inline constexpr std::string_view kFleetMaxLagRecordsVar =
    "KV_INDEXER_FLEET_MAX_LAG_RECORDS";

inline constexpr std::string_view kFleetMaxSilenceMsVar =
    "KV_INDEXER_FLEET_MAX_SILENCE_MS";
inline constexpr std::string_view kFleetLineAWritesVar =
    "KV_INDEXER_FLEET_LINE_A_WRITES";

inline constexpr std::string_view kFleetOpenAttemptsVar =
    "KV_INDEXER_FLEET_OPEN_ATTEMPTS";
inline constexpr uint64_t kDefaultFleetMaxLagRecords = 10000;
inline constexpr uint32_t kDefaultFleetOpenAttempts = 6;
inline constexpr uint32_t kMaxFleetOpenAttempts = 20;
inline constexpr std::chrono::milliseconds kDefaultFleetMaxSilence{10000};
// The shortest bound accepted: a replica that hears the log asks it about
// every read wait (200 ms), so a shorter bound would take a healthy replica
// for a cut-off one.
inline constexpr std::chrono::milliseconds kMinFleetMaxSilence{500};
inline constexpr std::chrono::milliseconds kMaxFleetMaxSilence{86400000};

enum class EventSource {
  kGrpc,       // the mutation RPCs
  kJetStream,  // the fleet event log on NATS JetStream
};

struct EventSourceConfig {
  EventSource source = EventSource::kGrpc;
  // NOT_SERVING while the replica is more records than this behind the log.
  uint64_t max_lag_records = kDefaultFleetMaxLagRecords;
  // NOT_SERVING once the log has not answered for longer than this; zero:
  // never for that reason.
  std::chrono::milliseconds max_silence = kDefaultFleetMaxSilence;
  // Whether a replica writes line-A writes through to the log (true) or
  // refuses them as it refuses every other write.
  bool line_a_writes = true;
  // Tries to open the log at start while it answers UNAVAILABLE.
  uint32_t open_attempts = kDefaultFleetOpenAttempts;
  // How to reach the log; set exactly when source is kJetStream.
  std::optional<fleet::EventLogConfig> log;
  // Snapshot writing and the lease (replica/snapshot_config.h); read, and
  // checked, in either mode.
  SnapshotConfig snapshots;

  bool follows_log() const { return source == EventSource::kJetStream; }
};

// Errors are InvalidArgument messages that name the variable, quote the
// value and say what is accepted.
[[nodiscard]] absl::StatusOr<EventSource> ParseEventSource(
    std::string_view value);
[[nodiscard]] absl::StatusOr<uint64_t> ParseFleetMaxLagRecords(
    std::string_view value);
// Zero, or kMinFleetMaxSilence..kMaxFleetMaxSilence in milliseconds.
[[nodiscard]] absl::StatusOr<std::chrono::milliseconds> ParseFleetMaxSilenceMs(
    std::string_view value);
// "0" or "1".
[[nodiscard]] absl::StatusOr<bool> ParseFleetLineAWrites(
    std::string_view value);
// 1..kMaxFleetOpenAttempts.
[[nodiscard]] absl::StatusOr<uint32_t> ParseFleetOpenAttempts(
    std::string_view value);
// Reads the five variables above and, with jetstream, the log's.
[[nodiscard]] absl::StatusOr<EventSourceConfig> LoadEventSourceConfig(
    const EnvLookup& env);

std::string_view EventSourceName(EventSource source);

}  // namespace kvindexer::replica

#endif  // KVINDEXER_REPLICA_EVENT_SOURCE_CONFIG_H_
