// ServerConfig: kv-indexer-server's configuration, read from the environment
// and the command line (docs/contract.md, "Transport > Server configuration").
//
// | Variable                             | Default        | Accepted values |
// | KV_INDEXER_LISTEN_ADDR               | [::1]:50051    | IP literal and
// port: a.b.c.d:port or [ipv6]:port; no hostnames | |
// KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT | 32             | integer 1..4294967295
// | | KV_INDEXER_BACKEND                   | kDefaultBackendName | backend name
// or path to a backend .so | | KV_INDEXER_BACKEND_PATH              | (empty)
// | colon-separated directories searched for backends | | KV_INDEXER_LOG_LEVEL
// | info           | see common/log_setup.h |
//
// The bounds of docs/contract.md, "Limits > Bounds"
// (KV_INDEXER_MAX_WORKER_ID_BYTES, KV_INDEXER_MAX_WORKER_ADDRESS_BYTES,
// KV_INDEXER_MAX_WORKER_EPOCH_BYTES, KV_INDEXER_MAX_WORKERS and
// KV_INDEXER_MAX_PREFIX_ANSWER_BYTES) are positive integers whose defaults
// and reasons are in core/request_limits.h.
// KV_INDEXER_LIVENESS and KV_INDEXER_LIVENESS_SWEEP_MS: the worker liveness
// block below. KV_INDEXER_DATA_DIR, KV_INDEXER_WAL_SYNC and the
// KV_INDEXER_CHECKPOINT_* variables: server/durability_config.h.
// KV_INDEXER_EVENT_SOURCE and KV_INDEXER_FLEET_MAX_LAG_RECORDS (with the
// KV_INDEXER_NATS_* variables in fleet mode): replica/event_source_config.h;
// KV_INDEXER_EVENT_SOURCE=jetstream with KV_INDEXER_DATA_DIR set is an
// error naming both. KV_INDEXER_APPLY_QUEUE_MAX, KV_INDEXER_LOOKUP_QUEUE_MAX
// and KV_INDEXER_ADMIN_QUEUE_MAX: server/queue_config.h.
// KV_INDEXER_GRPC_MEMORY_QUOTA_MIB, KV_INDEXER_GRPC_MAX_CONNECTIONS and
// KV_INDEXER_GRPC_REFLECTION: server/grpc_server_config.h.
// KV_INDEXER_STAGING_MAX_PLACEMENTS, KV_INDEXER_STAGING_MAX_TRANSACTIONS and
// KV_INDEXER_STAGING_IDLE_TIMEOUT_MS: server/staging_config.h.
// KV_INDEXER_ROUTER_URLS, KV_INDEXER_ID, KV_INDEXER_ADVERTISE_ENDPOINT,
// KV_INDEXER_STATUS_INTERVAL_MS and KV_INDEXER_ROUTER_TLS_CA_FILE:
// server/status_reporter_config.h.
//
// Port 0 is accepted and means "let the kernel choose a free port"; the server
// logs the port it actually bound. This is what tests use to avoid port races.
//
// Every bad value is an error whose message names the variable, quotes the
// value and says what is accepted. Values must be valid UTF-8.
#ifndef KVINDEXER_SERVER_SERVER_CONFIG_H_
#define KVINDEXER_SERVER_SERVER_CONFIG_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/env.h"
#include "common/log_setup.h"
#include "core/backend_loader.h"
#include "core/request_limits.h"
#include "replica/event_source_config.h"
#include "server/durability_config.h"
#include "server/grpc_server_config.h"
#include "server/metrics_config.h"
#include "server/queue_config.h"
#include "server/security_config.h"
#include "server/staging_config.h"
#include "server/status_reporter_config.h"
#include "spdlog/common.h"

namespace kvindexer {

inline constexpr std::string_view kListenAddrVar = "KV_INDEXER_LISTEN_ADDR";
inline constexpr std::string_view kPrefixQueryMaxInflightVar =
    "KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT";
inline constexpr std::string_view kBackendVar = "KV_INDEXER_BACKEND";
inline constexpr std::string_view kBackendPathVar = "KV_INDEXER_BACKEND_PATH";
// KV_INDEXER_LOG_LEVEL is kLogLevelVar of common/log_setup.h.

inline constexpr std::string_view kDefaultListenAddr = "[::1]:50051";
inline constexpr uint32_t kDefaultPrefixQueryMaxInflight = 32;

// --- Worker liveness (docs/contract.md, "Recovery > Worker liveness and
// removal") ---
// KV_INDEXER_LIVENESS: 1/true/yes or 0/false/no (any letter case).
inline constexpr std::string_view kLivenessVar = "KV_INDEXER_LIVENESS";
// KV_INDEXER_LIVENESS_SWEEP_MS: integer 1..4294967295.
inline constexpr std::string_view kLivenessSweepMsVar =
    "KV_INDEXER_LIVENESS_SWEEP_MS";
inline constexpr bool kDefaultLiveness = true;
inline constexpr uint32_t kDefaultLivenessSweepMs = 1000;
[[nodiscard]] absl::StatusOr<bool> ParseLiveness(std::string_view value);
[[nodiscard]] absl::StatusOr<uint32_t> ParseLivenessSweepMs(
    std::string_view value);
// --- end of worker liveness ---

struct ServerConfig {
  // A validated literal socket address in gRPC's form ("1.2.3.4:5",
  // "[::1]:5").
  std::string listen_addr{kDefaultListenAddr};
  uint32_t prefix_query_max_inflight = kDefaultPrefixQueryMaxInflight;
  std::string backend{kDefaultBackendName};  // name or path
  std::string backend_path;                  // may be empty
  spdlog::level::level_enum log_level = kDefaultLogLevel;
  // Bounds on what clients can make the server hold and serve.
  RequestLimits limits;
  // Worker liveness: heartbeats are read and silent workers swept.
  bool liveness = kDefaultLiveness;
  uint32_t liveness_sweep_ms = kDefaultLivenessSweepMs;
  // Restart-safe state (server/durability_config.h).
  DurabilityConfig durability;
  // Where writes come from (replica/event_source_config.h).
  replica::EventSourceConfig event_source;
  // TLS and the write token (server/security_config.h).
  SecurityConfig security;
  // The metrics endpoint (server/metrics_config.h); nullopt: off.
  std::optional<MetricsAddress> metrics_addr;
  // Workers with series of their own on it.
  uint32_t metrics_worker_series = kDefaultMetricsWorkerSeries;
  // The bounds of the work queues (server/queue_config.h).
  QueueLimits queues;
  // Memory quota, connection cap, reflection (server/grpc_server_config.h).
  GrpcServerConfig grpc;
  // Bounds on staged snapshots (server/staging_config.h).
  StagingLimits staging;
  // Status reports to routers (server/status_reporter_config.h).
  StatusReporterConfig status_reporter;
};

// Reads every variable above; unset variables take their defaults.
[[nodiscard]] absl::StatusOr<ServerConfig> LoadServerConfig(
    const EnvLookup& env);

// The per-variable parsers. Errors are InvalidArgument with the full message.
// KV_INDEXER_LOG_LEVEL is parsed by ParseLogLevel of common/log_setup.h.
[[nodiscard]] absl::StatusOr<std::string> ParseListenAddr(
    std::string_view value);
[[nodiscard]] absl::StatusOr<uint32_t> ParsePrefixQueryMaxInflight(
    std::string_view value);

// The four variables of RequestLimits; unset ones keep their defaults.
[[nodiscard]] absl::StatusOr<RequestLimits> LoadRequestLimits(
    const EnvLookup& env);

// What the command line asks for. The only option is --help (or -h); any
// other argument is an error.
enum class CommandLineAction { kRun, kHelp };
[[nodiscard]] absl::StatusOr<CommandLineAction> ParseCommandLine(
    std::span<const char* const> args);  // args[0] is the program name

// Usage text: synopsis plus the table of variables.
std::string UsageText(std::string_view program);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_SERVER_CONFIG_H_
