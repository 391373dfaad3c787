#include "server/server_config.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "common/absl_view.h"
#include "fmt/format.h"

namespace kvindexer {
namespace {

constexpr std::string_view kListenAddrAccepted =
    "a literal IP address and port, such as 127.0.0.1:50051 or [::1]:50051 "
    "(IPv6 in brackets; hostnames are not resolved; port 0..65535, where 0 "
    "lets the kernel pick a free port)";
constexpr std::string_view kMaxInflightAccepted =
    "a positive integer (1..4294967295), for example 32";
constexpr std::string_view kBackendAccepted =
    "a backend name (for example absl_rwlock) or the path of a backend .so "
    "file";

// Bounds (core/request_limits.h): digits only, at least 1. An answer ceiling
// stays at or below INT_MAX, the largest message the service can encode.
constexpr Uint32Syntax kBoundSyntax{.min = 1};
constexpr Uint32Syntax kAnswerBytesSyntax{.min = 1, .max = 2147483647};

constexpr std::string_view kLivenessAccepted =
    "1, true or yes to sweep workers whose heartbeat expired; 0, false or no "
    "not to";
constexpr std::string_view kLivenessSweepMsAccepted =
    "a positive integer of milliseconds (1..4294967295), for example 1000";
constexpr Uint32Syntax kLivenessSweepMsSyntax{.min = 1};

// Port numbers: digits only, 0..65535.
constexpr Uint32Syntax kPortSyntax{.max = 65535};
// KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT: digits only, at least 1.
constexpr Uint32Syntax kMaxInflightSyntax{.min = 1};

}  // namespace

absl::StatusOr<std::string> ParseListenAddr(std::string_view value) {
  const auto bad = [&] {
    return InvalidEnvValue(kListenAddrVar, value, kListenAddrAccepted);
  };
  std::string host;
  std::string_view port;
  int family = AF_INET;
  if (!value.empty() && value.front() == '[') {
    const size_t close = value.find(']');
    if (close == std::string_view::npos || close + 1 >= value.size() ||
        value[close + 1] != ':') {
      return bad();
    }
    host = std::string(value.substr(1, close - 1));
    port = value.substr(close + 2);
    family = AF_INET6;
  } else {
    const size_t colon = value.rfind(':');
    if (colon == std::string_view::npos) return bad();
    host = std::string(value.substr(0, colon));
    port = value.substr(colon + 1);
  }
  // inet_pton accepts only numeric forms (and no NUL bytes, which c_str()
  // would cut), so a hostname such as "localhost" fails here.
  unsigned char buf[sizeof(in6_addr)];
  if (host.find('\0') != std::string::npos ||
      inet_pton(family, host.c_str(), buf) != 1) {
    return bad();
  }
  if (!ParseEnvUint32(kListenAddrVar, port, kPortSyntax, kListenAddrAccepted)
           .ok()) {
    return bad();
  }
  return std::string(value);
}

absl::StatusOr<uint32_t> ParsePrefixQueryMaxInflight(std::string_view value) {
  return ParseEnvUint32(kPrefixQueryMaxInflightVar, value, kMaxInflightSyntax,
                        kMaxInflightAccepted);
}

absl::StatusOr<RequestLimits> LoadRequestLimits(const EnvLookup& env) {
  RequestLimits limits;
  struct Bound {
    std::string_view var;
    const Uint32Syntax& syntax;
    std::string_view accepted;
    uint32_t* value;
  };
  const Bound bounds[] = {
      {kMaxWorkerIdBytesVar, kBoundSyntax,
       "a positive integer of bytes (1..4294967295), for example 256",
       &limits.max_worker_id_bytes},
      {kMaxWorkerAddressBytesVar, kBoundSyntax,
       "a positive integer of bytes (1..4294967295), for example 2048",
       &limits.max_worker_address_bytes},
      {kMaxWorkerEpochBytesVar, kBoundSyntax,
       "a positive integer of bytes (1..4294967295), for example 256",
       &limits.max_worker_epoch_bytes},
      {kMaxWorkersVar, kBoundSyntax,
       "a positive integer of workers (1..4294967295), for example 65536",
       &limits.max_workers},
      {kMaxPrefixAnswerBytesVar, kAnswerBytesSyntax,
       "a positive integer of bytes (1..2147483647), for example 4000000",
       &limits.max_prefix_answer_bytes},
  };
  for (const Bound& bound : bounds) {
    if (auto v = env(bound.var)) {
      auto n = ParseEnvUint32(bound.var, *v, bound.syntax, bound.accepted);
      if (!n.ok()) return n.status();
      *bound.value = *n;
    }
  }
  // The placement bound: 0 (the default) leaves it off.
  constexpr std::string_view kPlacementsAccepted =
      "0 (unbounded) or a whole number of placements (1..4294967295), for "
      "example 20000000";
  uint32_t max_placements = 0;
  uint32_t max_per_worker = 0;
  if (absl::Status s = ReadEnvUint32(env, kMaxPlacementsVar, Uint32Syntax{},
                                     kPlacementsAccepted, &max_placements);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ReadEnvUint32(env, kMaxPlacementsPerWorkerVar, Uint32Syntax{},
                        kPlacementsAccepted, &max_per_worker);
      !s.ok()) {
    return s;
  }
  limits.placement_bound = {.max_placements = max_placements,
                            .max_per_worker = max_per_worker};
  return limits;
}

absl::StatusOr<bool> ParseLiveness(std::string_view value) {
  const std::string lower = absl::AsciiStrToLower(AbslView(value));
  if (lower == "1" || lower == "true" || lower == "yes") return true;
  if (lower == "0" || lower == "false" || lower == "no") return false;
  return InvalidEnvValue(kLivenessVar, value, kLivenessAccepted);
}

absl::StatusOr<uint32_t> ParseLivenessSweepMs(std::string_view value) {
  return ParseEnvUint32(kLivenessSweepMsVar, value, kLivenessSweepMsSyntax,
                        kLivenessSweepMsAccepted);
}

absl::StatusOr<ServerConfig> LoadServerConfig(const EnvLookup& env) {
  ServerConfig config;
  if (auto v = env(kListenAddrVar)) {
    auto addr = ParseListenAddr(*v);
    if (!addr.ok()) return addr.status();
    config.listen_addr = *std::move(addr);
  }
  if (auto v = env(kPrefixQueryMaxInflightVar)) {
    auto n = ParsePrefixQueryMaxInflight(*v);
    if (!n.ok()) return n.status();
    config.prefix_query_max_inflight = *n;
  }
  if (auto v = env(kBackendVar)) {
    if (v->empty() || !IsValidUtf8(*v)) {
      return InvalidEnvValue(kBackendVar, *v, kBackendAccepted);
    }
    config.backend = *std::move(v);
  }
  if (auto v = env(kBackendPathVar)) {
    if (!IsValidUtf8(*v)) {
      return InvalidEnvValue(
          kBackendPathVar, *v,
          "a colon-separated list of directories (valid UTF-8)");
    }
    config.backend_path = *std::move(v);
  }
  auto limits = LoadRequestLimits(env);
  if (!limits.ok()) return limits.status();
  config.limits = *limits;
  auto level = LoadLogLevel(env);
  if (!level.ok()) return level.status();
  config.log_level = *level;
  // Worker liveness.
  if (auto v = env(kLivenessVar)) {
    auto on = ParseLiveness(*v);
    if (!on.ok()) return on.status();
    config.liveness = *on;
  }
  if (auto v = env(kLivenessSweepMsVar)) {
    auto ms = ParseLivenessSweepMs(*v);
    if (!ms.ok()) return ms.status();
    config.liveness_sweep_ms = *ms;
  }
  auto durability = LoadDurabilityConfig(env);
  if (!durability.ok()) return durability.status();
  config.durability = *std::move(durability);
  auto event_source = replica::LoadEventSourceConfig(env);
  if (!event_source.ok()) return event_source.status();
  config.event_source = *std::move(event_source);
  if (config.event_source.follows_log() && config.durability.enabled()) {
    return InvalidEnvValueBecause(
        replica::kEventSourceVar,
        replica::EventSourceName(config.event_source.source),
        fmt::format("{} is set too, and a replica's state comes from the "
                    "event log alone",
                    kDataDirVar),
        fmt::format("jetstream with {} unset or empty, or grpc", kDataDirVar));
  }
  // Replicas keep an index-wide bound through the event log
  // (replica/eviction_proposer.h): each one's totals also count its own
  // liveness clears, so none decides such evictions by itself.
  if (config.event_source.follows_log()) {
    config.limits.placement_bound.index_bound_from_log = true;
  }
  auto security = LoadSecurityConfig(env);
  if (!security.ok()) return security.status();
  config.security = *std::move(security);
  auto metrics_addr = LoadMetricsAddr(env);
  if (!metrics_addr.ok()) return metrics_addr.status();
  config.metrics_addr = *std::move(metrics_addr);
  auto worker_series = LoadMetricsWorkerSeries(env);
  if (!worker_series.ok()) return worker_series.status();
  config.metrics_worker_series = *worker_series;
  auto queues = LoadQueueLimits(env);
  if (!queues.ok()) return queues.status();
  config.queues = *queues;
  auto grpc = LoadGrpcServerConfig(env);
  if (!grpc.ok()) return grpc.status();
  config.grpc = *grpc;
  auto staging = LoadStagingLimits(env);
  if (!staging.ok()) return staging.status();
  config.staging = *staging;
  auto status_reporter = LoadStatusReporterConfig(env);
  if (!status_reporter.ok()) return status_reporter.status();
  config.status_reporter = *std::move(status_reporter);
  return config;
}

absl::StatusOr<CommandLineAction> ParseCommandLine(
    std::span<const char* const> args) {
  CommandLineAction action = CommandLineAction::kRun;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      action = CommandLineAction::kHelp;
    } else {
      return absl::InvalidArgumentError(fmt::format(
          "unknown argument {}: kv-indexer-server is configured through "
          "environment variables (see --help); the only option is --help",
          QuoteEnvValue(arg)));
    }
  }
  return action;
}

std::string UsageText(std::string_view program) {
  struct Row {
    std::string_view var;
    std::string default_value;
    std::string_view accepted;
  };
  const Row rows[] = {
      {kListenAddrVar, std::string(kDefaultListenAddr),
       "IP literal and port (IPv6 in brackets); no hostnames; port 0 picks "
       "a free port"},
      {kPrefixQueryMaxInflightVar,
       std::to_string(kDefaultPrefixQueryMaxInflight),
       "positive integer: concurrent prefix scans; more get "
       "RESOURCE_EXHAUSTED"},
      {kBackendVar, std::string(kDefaultBackendName),
       "backend name (memory = the default), or path to a backend .so"},
      {kBackendPathVar, "(empty)",
       "colon-separated directories searched for backends by name"},
      {kLogLevelVar, "info", kLogLevelValues},
      {kMaxWorkerIdBytesVar, std::to_string(kDefaultMaxWorkerIdBytes),
       "bytes of a worker_id; longer is INVALID_ARGUMENT"},
      {kMaxWorkerAddressBytesVar, std::to_string(kDefaultMaxWorkerAddressBytes),
       "bytes of a worker_address; longer is INVALID_ARGUMENT"},
      {kMaxWorkerEpochBytesVar, std::to_string(kDefaultMaxWorkerEpochBytes),
       "bytes of a worker_epoch; longer is INVALID_ARGUMENT"},
      {kMaxWorkersVar, std::to_string(kDefaultMaxWorkers),
       "worker records held at once; a new one beyond is "
       "RESOURCE_EXHAUSTED"},
      {kMaxPrefixAnswerBytesVar, std::to_string(kDefaultMaxPrefixAnswerBytes),
       "encoded bytes of one prefix answer (1..2147483647); larger is "
       "RESOURCE_EXHAUSTED"},
      {kMaxPlacementsVar, "0",
       "placements the index holds; past it, the tiers of the workers over "
       "their fair share are evicted, SSD first; 0: unbounded"},
      {kMaxPlacementsPerWorkerVar, "0",
       "placements one worker (stream) holds; past it, its own tiers are "
       "evicted, SSD first; 0: unbounded"},
      {kApplyQueueMaxVar, std::to_string(kDefaultApplyQueueMax),
       "1..1048576: mutations waiting for the apply thread; more get "
       "RESOURCE_EXHAUSTED"},
      {kLookupQueueMaxVar, std::to_string(kDefaultLookupQueueMax),
       "1..1048576: MatchExternalKv and GetExternalKvHitCounts waiting; "
       "more get RESOURCE_EXHAUSTED"},
      {kAdminQueueMaxVar, std::to_string(kDefaultAdminQueueMax),
       "1..1048576: admin calls waiting; more get RESOURCE_EXHAUSTED"},
      {kGrpcMaxConnectionsVar, std::to_string(kDefaultGrpcMaxConnections),
       "1..1048576: open gRPC connections; more are closed at once"},
      {kGrpcMemoryQuotaMibVar, std::to_string(kDefaultGrpcMemoryQuotaMib),
       "MiB gRPC may hold for connections and calls (16..1048576), 0: no "
       "quota"},
      {kGrpcReflectionVar, "on",
       "on or off: offer gRPC server reflection on the port"},
      {kStagingMaxPlacementsVar, std::to_string(kDefaultStagingMaxPlacements),
       "1..50000000: placements all open snapshot transactions may reserve; "
       "a Begin beyond is RESOURCE_EXHAUSTED"},
      {kStagingMaxTransactionsVar,
       std::to_string(kDefaultStagingMaxTransactions),
       "positive integer: open snapshot transactions; a Begin beyond is "
       "RESOURCE_EXHAUSTED"},
      {kStagingIdleTimeoutMsVar, std::to_string(kDefaultStagingIdleTimeoutMs),
       "ms (1000..3600000) a snapshot transaction may go without a Begin or "
       "Append before it expires"},
      {kLivenessVar, "1",
       "1/true/yes or 0/false/no: clear workers whose heartbeat expired"},
      {kLivenessSweepMsVar, std::to_string(kDefaultLivenessSweepMs),
       "positive integer: milliseconds between liveness sweeps"},
      {kDataDirVar, "(unset)",
       "directory of the write-ahead log and checkpoints; unset or empty: "
       "in memory only"},
      {kWalSyncVar, "always",
       "always (ack after fdatasync) or none (ack after write)"},
      {kCheckpointBytesVar, std::to_string(kDefaultCheckpointBytes),
       "log bytes that start a checkpoint; at least 1048576"},
      {kCheckpointBuilderVar, "process",
       "process (checkpoints built by a process of their own at idle CPU "
       "priority) or thread (by a thread of the server)"},
      {kCheckpointTimeoutMsVar, std::to_string(kDefaultCheckpointTimeoutMs),
       "ms a checkpoint build may run (1000..86400000); a longer one is "
       "abandoned, counted as failed and retried"},
      {kMaxReplayBytesVar, "2 x KV_INDEXER_CHECKPOINT_BYTES",
       "most log bytes a restart replays: writes wait for the checkpoint "
       "build at that point; 0 (no bound) or at least twice "
       "KV_INDEXER_CHECKPOINT_BYTES"},
      {replica::kEventSourceVar, "grpc",
       "grpc (mutation RPCs) or jetstream (follow the fleet event log; "
       "needs KV_INDEXER_NATS_URL)"},
      {replica::kFleetMaxLagRecordsVar,
       std::to_string(replica::kDefaultFleetMaxLagRecords),
       "positive integer: log records a replica may lag before it reports "
       "NOT_SERVING"},
      {replica::kFleetMaxSilenceMsVar,
       std::to_string(replica::kDefaultFleetMaxSilence.count()),
       "ms a replica may go without an answer from the log before it "
       "reports NOT_SERVING (500..86400000), 0: never"},
      {replica::kFleetLineAWritesVar, "1",
       "1: a replica writes line-A writes (and staged snapshot commits) "
       "through to the fleet event log; 0: it refuses them"},
      {replica::kFleetOpenAttemptsVar,
       std::to_string(replica::kDefaultFleetOpenAttempts),
       "tries to open the fleet event log at start while NATS is "
       "unavailable (1..20; waits of 0.5 s doubling between them)"},
      {replica::kSnapshotIntervalVar, "60000",
       "ms between a replica's fleet snapshots (1000..86400000), 0: this "
       "replica writes none"},
      {replica::kSnapshotKeepVar, "2",
       "fleet snapshots kept (1..100); the log is trimmed behind the oldest"},
      {replica::kLeaseTtlVar, "15000",
       "ms a silent snapshot writer keeps its lease (300..600000)"},
      {fleet::kNatsUrlVar, "(unset)",
       "jetstream: comma-separated nats://, tls://, ws:// or wss:// URLs "
       "(required)"},
      {fleet::kNatsCredsFileVar, "(unset)",
       "jetstream: NATS .creds file; not with the token file"},
      {fleet::kNatsTokenFileVar, "(unset)",
       "jetstream: file holding a NATS token"},
      {fleet::kNatsTlsCaFileVar, "(unset)",
       "jetstream: PEM roots for the NATS servers (turns TLS on)"},
      {fleet::kNatsTlsCertFileVar, "(unset)",
       "jetstream: PEM client certificate for NATS (with the key file)"},
      {fleet::kNatsTlsKeyFileVar, "(unset)",
       "jetstream: PEM private key of that certificate"},
      {fleet::kNatsTimeoutVar, "5000",
       "jetstream: ms to connect and per JetStream request (100..600000)"},
      {fleet::kNatsStreamVar, "KVINDEXER_EVENTS",
       "jetstream: the event log's stream (1 to 64 of A-Z a-z 0-9 _ -)"},
      {fleet::kNatsSubjectPrefixVar, "kvindexer",
       "jetstream: dot-separated subject prefix of the records"},
      {fleet::kNatsReplicasVar, "1",
       "jetstream: copies of the stream in the cluster (1..5)"},
      {fleet::kNatsDedupWindowVar, "120000",
       "jetstream: ms the stream remembers de-duplication ids "
       "(1000..86400000)"},
      {kMetricsAddrVar, "(unset)",
       "host:port of /metrics, /healthz and /readyz (port 0 picks a free "
       "port); unset or empty: off"},
      {kMetricsWorkerSeriesVar, "1000",
       "workers with /metrics series of their own: the first by id for "
       "kvindexer_worker_*, the first to match best for the prefix reuse "
       "counter (0..100000; 0: none)"},
      {"KV_INDEXER_ROBIN_MERGE_MIN_DELTA", "1024",
       "robin_sharded_snapshot: changed blocks per shard before a merge "
       "into the base table; 0..4294967295"},
      {kRouterUrlsVar, "(unset)",
       "comma-separated http(s)://host[:port][/path] of routers to post "
       "status reports to; unset: none"},
      {kIndexerIdVar, "$HOSTNAME",
       "this indexer's name in status reports (else kv-indexer)"},
      {kAdvertiseEndpointVar, "(unset)",
       "http://host[:port], https://host[:port] or unix:/path routers give "
       "clients; required with router URLs"},
      {kStatusIntervalMsVar, std::to_string(kDefaultStatusIntervalMs),
       "positive integer: ms between status reports (500 or more: WARN)"},
      {kRouterTlsCaFileVar, "(unset)",
       "PEM roots for https:// routers; unset: the system's"},
      {kTlsCertFileVar, "(unset)",
       "PEM certificate chain; with the key file the server speaks TLS"},
      {kTlsKeyFileVar, "(unset)", "PEM private key of that certificate"},
      {kTlsClientCaFileVar, "(unset)",
       "PEM roots client certificates must chain to (mutual TLS)"},
      {kWriteTokenFileVar, "(unset)",
       "file holding the bearer token required for every mutation"},
      {kAdminReadTokenFileVar, "(unset)",
       "file holding the bearer token (or the write token) every admin "
       "call must carry"},
  };
  std::string out = fmt::format(
      "Usage: {} [--help]\n"
      "\n"
      "Single-process SGLang KV indexer serving the gRPC service\n"
      "kv_indexer.v1.KVIndexer. It is configured through the environment:\n"
      "\n"
      "  {:<37} {:<14} {}\n",
      program, "VARIABLE", "DEFAULT", "ACCEPTED");
  for (const Row& row : rows) {
    out += fmt::format("  {:<37} {:<14} {}\n", row.var, row.default_value,
                       row.accepted);
  }
  out +=
      "\n"
      "A backend name N is looked up as kvindexer-backend-N.so, first in\n"
      "../lib/kvindexer/backends relative to the executable, then in each\n"
      "directory of KV_INDEXER_BACKEND_PATH. SIGINT or SIGTERM stops the\n"
      "server gracefully: it stops accepting calls and lets running calls\n"
      "finish.\n";
  return out;
}

}  // namespace kvindexer
