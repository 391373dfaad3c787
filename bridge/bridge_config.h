// The bridge's configuration, read once from the environment at startup
// (docs/bridge-events.md, "Configuration"). Every rule of that section lives
// here: defaults, which variables
// are trimmed, aliases, and startup validation.
#ifndef KVINDEXER_BRIDGE_BRIDGE_CONFIG_H_
#define KVINDEXER_BRIDGE_BRIDGE_CONFIG_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "bridge/kv_events.h"
#include "bridge/snapshot_source.h"
#include "bridge/workers_json.h"
#include "common/client_channel.h"
#include "common/env.h"
#include "common/log_setup.h"
#include "common/metrics_address.h"
#include "fleet/fleet_config.h"
#include "kv_indexer.pb.h"
#include "spdlog/common.h"

namespace kvindexer::bridge {

// KV_INDEXER_SEQUENCE_GATE (docs/bridge-events.md, "Recovery > Modes").
enum class SequenceGate : uint8_t {
  kAuto,  // gated if the server has the recovery RPCs, else legacy
  kOn,    // gated; a server without them is a permanent error
  kOff,   // legacy
};
std::string_view SequenceGateName(SequenceGate gate);

// KV_INDEXER_SINK (docs/fleet.md, "Configuration"): where the bridge's
// requests go.
enum class Sink : uint8_t {
  kGrpc,       // ApplyExternalKvBatch and friends to KV_INDEXER_ENDPOINT
  kJetStream,  // log records appended to the fleet's event log
};
std::string_view SinkName(Sink sink);

inline constexpr size_t kDefaultLiveBufferBatches = 4096;
inline constexpr std::chrono::milliseconds kDefaultHeartbeatTtl{30000};
inline constexpr std::chrono::milliseconds kDefaultResyncClearAfter{10'000};

struct BridgeConfig {
  // KV_INDEXER_WORKERS_JSON (docs/bridge-events.md, "Many streams in one
  // process"): non-empty selects multi-stream mode, in which the
  // single-worker fields below (worker_id through the endpoints, topic and
  // dp_rank) are not read.
  std::vector<WorkerEntry> workers;
  // Lines LoadBridgeConfig could not log itself, for the caller to log at
  // WARN once.
  std::vector<std::string> warnings;
  std::string worker_id;
  std::string worker_address;
  std::string indexer_endpoint = "http://[::1]:50051";
  Sink sink = Sink::kGrpc;
  // The KV_INDEXER_NATS_* variables; set exactly when sink is kJetStream.
  std::optional<fleet::EventLogConfig> event_log;
  std::string event_endpoint = "tcp://127.0.0.1:5557";
  std::string event_topic;
  std::vector<Tier> clear_tiers = {Tier::kHbm, Tier::kDram, Tier::kSsd};
  // Absent when no components are configured (legacy worker).
  std::optional<kv_indexer::v1::WorkerCacheSpec> cache_spec;
  spdlog::level::level_enum log_level = kDefaultLogLevel;
  // 0 disables the periodic stats line (it is still printed at shutdown).
  std::chrono::seconds stats_interval{30};
  // Recovery ("Recovery > Variables"). Empty endpoint = not configured.
  std::string replay_endpoint;
  std::string snapshot_endpoint;
  // Which snapshot protocol to ask for (SGLANG_KV_SNAPSHOT_PROTOCOL).
  SnapshotProtocol snapshot_protocol = SnapshotProtocol::kAuto;
  // The publisher's data-parallel rank, checked against a snapshot's
  // replica_rank (KV_INDEXER_DP_RANK).
  uint32_t dp_rank = 0;
  SequenceGate sequence_gate = SequenceGate::kAuto;
  size_t live_buffer_batches = kDefaultLiveBufferBatches;
  // KV_INDEXER_SNAPSHOT_CONCURRENCY: multi-stream mode's bound on snapshot
  // fetches with their installs running at once (1..64).
  size_t snapshot_concurrency = 4;
  // Worker liveness ("Recovery > Worker liveness"): the TTL each heartbeat
  // asks the server for (KV_INDEXER_HEARTBEAT_TTL_MS); 0 disables them.
  std::chrono::milliseconds heartbeat_ttl = kDefaultHeartbeatTtl;
  // How long a stream may stay unsynchronised, with resynchronisation
  // attempts failing, before the bridge clears the worker's placement at the
  // server (KV_INDEXER_RESYNC_CLEAR_AFTER_MS; "Recovery > A resync that
  // cannot finish").
  std::chrono::milliseconds resync_clear_after = kDefaultResyncClearAfter;
  // TLS and the write token toward the indexer (common/client_channel.h,
  // docs/security.md).
  ClientSecurity security;
  // KV_INDEXER_BRIDGE_METRICS_ADDR (docs/metrics.md): where /metrics,
  // /healthz and /readyz are served; nullopt (unset or blank): off.
  std::optional<MetricsAddress> metrics_addr;
};

// Reads and validates the configuration. A startup error is returned as
// InvalidArgument whose message names the variable, the bad value and what
// is accepted. An unusable endpoint is not a startup error
// (docs/bridge-events.md, "Configuration > Startup validation").
[[nodiscard]] absl::StatusOr<BridgeConfig> LoadBridgeConfig(
    const EnvLookup& env);

// Parses a comma list of configuration tier names (aliases allowed, items
// trimmed, empty items skipped). Errors name `variable`.
[[nodiscard]] absl::StatusOr<std::vector<Tier>> ParseTierList(
    std::string_view variable, std::string_view value);

// Usage text for --help: synopsis, the variable table and exit codes.
std::string BridgeUsage();

// One-line summary of the effective configuration for the startup log.
std::string DescribeConfig(const BridgeConfig& config);

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_BRIDGE_CONFIG_H_
