#include "bridge/bridge_config.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bridge/cache_names.h"
#include "common/absl_view.h"

namespace kvindexer::bridge {
namespace {

constexpr char kTierListAccepted[] =
    "a comma-separated list of HBM (or GPU), DRAM (or CPU, CPU_PINNED), "
    "SSD (or DISK), any case";
constexpr char kComponentsAccepted[] =
    "a comma-separated list of full, swa, mamba, any case";
// Read only in single-worker mode; KV_INDEXER_WORKERS_JSON replaces them.
constexpr std::string_view kSingleWorkerVariables[] = {
    "KV_INDEXER_WORKER_ID",      "KV_INDEXER_WORKER_ADDRESS",
    "SGLANG_KV_EVENT_ENDPOINT",  "SGLANG_KV_EVENT_TOPIC",
    "SGLANG_KV_REPLAY_ENDPOINT", "SGLANG_KV_SNAPSHOT_ENDPOINT",
    "KV_INDEXER_DP_RANK"};
constexpr char kUint32Accepted[] = "an unsigned 32-bit integer (0..4294967295)";
// Unsigned 32-bit decimal with an optional leading '+', as Rust's u32 parser
// (the reference bridge) accepts.
constexpr Uint32Syntax kUint32Syntax{.allow_plus_sign = true};

// Items of a comma list, each trimmed; empty items are skipped.
std::vector<std::string_view> SplitTrimmed(std::string_view value) {
  std::vector<std::string_view> items;
  size_t start = 0;
  while (true) {
    const size_t comma = value.find(',', start);
    const std::string_view raw = value.substr(
        start, comma == std::string_view::npos ? std::string_view::npos
                                               : comma - start);
    const absl::string_view item = absl::StripAsciiWhitespace(AbslView(raw));
    if (!item.empty()) items.emplace_back(item.data(), item.size());
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return items;
}

absl::StatusOr<uint32_t> ParseUint32(std::string_view variable,
                                     std::string_view value) {
  return ParseEnvUint32(variable, value, kUint32Syntax, kUint32Accepted);
}

absl::StatusOr<uint32_t> TierMask(const EnvLookup& env, std::string_view name) {
  std::optional<std::string> value = LookupTrimmed(env, name);
  std::vector<Tier> tiers = {Tier::kHbm, Tier::kDram};
  if (value) {
    absl::StatusOr<std::vector<Tier>> parsed = ParseTierList(name, *value);
    if (!parsed.ok()) return parsed.status();
    tiers = *std::move(parsed);
  }
  uint32_t mask = 0;
  for (Tier t : tiers) mask |= TierBit(t);
  return mask;
}

absl::StatusOr<std::optional<kv_indexer::v1::WorkerCacheSpec>> LoadCacheSpec(
    const EnvLookup& env) {
  // Parsed even without SWA: a bad value is always a startup error.
  uint32_t swa_window = 0;
  bool swa_window_set = false;
  if (auto window = LookupTrimmed(env, "KV_INDEXER_SWA_WINDOW_TOKENS")) {
    absl::StatusOr<uint32_t> parsed =
        ParseUint32("KV_INDEXER_SWA_WINDOW_TOKENS", *window);
    if (!parsed.ok()) return parsed.status();
    swa_window = *parsed;
    swa_window_set = true;
  }
  uint32_t version = 1;
  if (auto v = LookupTrimmed(env, "KV_INDEXER_CACHE_SPEC_VERSION")) {
    absl::StatusOr<uint32_t> parsed =
        ParseUint32("KV_INDEXER_CACHE_SPEC_VERSION", *v);
    if (!parsed.ok()) return parsed.status();
    version = *parsed;
  }

  std::optional<std::string> components =
      LookupTrimmed(env, "KV_INDEXER_CACHE_COMPONENTS");
  if (!components) return std::nullopt;  // legacy: no spec

  uint32_t bits = kComponentFull;  // FULL is always added
  for (std::string_view item : SplitTrimmed(*components)) {
    std::optional<uint32_t> bit = ComponentBitFromName(item);
    if (!bit) {
      return InvalidEnvValueBecause(
          "KV_INDEXER_CACHE_COMPONENTS", *components,
          absl::StrCat("unknown component ", QuoteEnvValue(item)),
          kComponentsAccepted);
    }
    bits |= *bit;
  }
  if ((bits & kComponentSwa) != 0 && swa_window == 0) {
    return InvalidEnvValueBecause(
        "KV_INDEXER_SWA_WINDOW_TOKENS", swa_window_set ? "0" : "",
        "SWA is configured in KV_INDEXER_CACHE_COMPONENTS",
        "a window of at least 1 token (1..4294967295)");
  }
  kv_indexer::v1::WorkerCacheSpec spec;
  spec.set_version(version);
  spec.set_components(bits);
  spec.set_swa_window_tokens(swa_window);
  absl::StatusOr<uint32_t> full = TierMask(env, "KV_INDEXER_FULL_TIERS");
  if (!full.ok()) return full.status();
  absl::StatusOr<uint32_t> swa = TierMask(env, "KV_INDEXER_SWA_TIERS");
  if (!swa.ok()) return swa.status();
  absl::StatusOr<uint32_t> mamba = TierMask(env, "KV_INDEXER_MAMBA_TIERS");
  if (!mamba.ok()) return mamba.status();
  spec.set_full_tier_mask(*full);
  spec.set_swa_tier_mask(*swa);
  spec.set_mamba_tier_mask(*mamba);
  return spec;
}

}  // namespace

absl::StatusOr<std::vector<Tier>> ParseTierList(std::string_view variable,
                                                std::string_view value) {
  std::vector<Tier> tiers;
  for (std::string_view item : SplitTrimmed(value)) {
    std::optional<Tier> tier = TierFromConfigName(item);
    if (!tier) {
      return InvalidEnvValueBecause(
          variable, value, absl::StrCat("unknown tier ", QuoteEnvValue(item)),
          kTierListAccepted);
    }
    tiers.push_back(*tier);
  }
  return tiers;
}

absl::StatusOr<BridgeConfig> LoadBridgeConfig(const EnvLookup& env) {
  BridgeConfig config;
  if (std::optional<std::string> workers =
          LookupTrimmed(env, kWorkersJsonVariable)) {
    absl::StatusOr<WorkersList> list = ParseWorkersJson(*workers);
    if (!list.ok()) return list.status();
    config.workers = std::move(list->entries);
    config.warnings = std::move(list->warnings);
    std::vector<std::string> ignored;
    for (std::string_view name : kSingleWorkerVariables) {
      if (env(name)) ignored.emplace_back(name);
    }
    if (!ignored.empty()) {
      config.warnings.push_back(absl::StrCat(kWorkersJsonVariable,
                                             " is set: ignoring ",
                                             absl::StrJoin(ignored, ", ")));
    }
  } else {
    std::optional<std::string> worker_id = env("KV_INDEXER_WORKER_ID");
    if (!worker_id) {
      return absl::InvalidArgumentError(
          "KV_INDEXER_WORKER_ID is not set: it is required and names this "
          "worker's event stream (any string, e.g. worker-0), unless "
          "KV_INDEXER_WORKERS_JSON lists the workers");
    }
    config.worker_id = *worker_id;
    // Read raw ("Configuration > Trimming" in docs/bridge-events.md):
    // set-but-empty values are used as empty strings.
    if (auto v = env("KV_INDEXER_WORKER_ADDRESS")) config.worker_address = *v;
  }
  const bool multi = !config.workers.empty();
  if (auto v = env("KV_INDEXER_ENDPOINT")) config.indexer_endpoint = *v;
  if (auto v = LookupTrimmed(env, "KV_INDEXER_SINK")) {
    const std::string lower = absl::AsciiStrToLower(*v);
    if (lower == "grpc") {
      config.sink = Sink::kGrpc;
    } else if (lower == "jetstream") {
      config.sink = Sink::kJetStream;
    } else {
      return InvalidEnvValue("KV_INDEXER_SINK", *v,
                             "grpc or jetstream, any case");
    }
  }
  if (multi && config.sink != Sink::kGrpc) {
    return absl::InvalidArgumentError(
        absl::StrCat("KV_INDEXER_SINK=", std::string(SinkName(config.sink)),
                     " cannot be combined with ", kWorkersJsonVariable,
                     ": many streams in one process need "
                     "KV_INDEXER_SINK=grpc (or unset)"));
  }
  if (config.sink == Sink::kJetStream) {
    // KV_INDEXER_ENDPOINT is then unused.
    absl::StatusOr<fleet::EventLogConfig> log = fleet::ParseEventLogConfig(env);
    if (!log.ok()) return log.status();
    config.event_log = *std::move(log);
  }
  if (!multi) {
    if (auto v = env("SGLANG_KV_EVENT_ENDPOINT")) config.event_endpoint = *v;
    if (auto v = env("SGLANG_KV_EVENT_TOPIC")) config.event_topic = *v;
  }
  if (auto v = env("KV_INDEXER_CLEAR_TIERS")) {
    absl::StatusOr<std::vector<Tier>> tiers =
        ParseTierList("KV_INDEXER_CLEAR_TIERS", *v);
    if (!tiers.ok()) return tiers.status();
    config.clear_tiers = *std::move(tiers);
  }
  absl::StatusOr<std::optional<kv_indexer::v1::WorkerCacheSpec>> spec =
      LoadCacheSpec(env);
  if (!spec.ok()) return spec.status();
  config.cache_spec = *std::move(spec);

  absl::StatusOr<spdlog::level::level_enum> level = LoadLogLevel(env);
  if (!level.ok()) return level.status();
  config.log_level = *level;
  if (auto v = LookupTrimmed(env, "KV_INDEXER_STATS_INTERVAL_SECS")) {
    absl::StatusOr<uint32_t> secs =
        ParseUint32("KV_INDEXER_STATS_INTERVAL_SECS", *v);
    if (!secs.ok()) return secs.status();
    config.stats_interval = std::chrono::seconds(*secs);
  }
  // Endpoints are used as set, like the event endpoint; empty = unset.
  if (!multi) {
    if (auto v = env("SGLANG_KV_REPLAY_ENDPOINT")) config.replay_endpoint = *v;
    if (auto v = env("SGLANG_KV_SNAPSHOT_ENDPOINT")) {
      config.snapshot_endpoint = *v;
    }
  }
  if (auto v = LookupTrimmed(env, "SGLANG_KV_SNAPSHOT_PROTOCOL")) {
    const std::string lower = absl::AsciiStrToLower(*v);
    if (lower == "auto") {
      config.snapshot_protocol = SnapshotProtocol::kAuto;
    } else if (lower == "2") {
      config.snapshot_protocol = SnapshotProtocol::kV2;
    } else if (lower == "1") {
      config.snapshot_protocol = SnapshotProtocol::kV1;
    } else {
      return InvalidEnvValue(
          "SGLANG_KV_SNAPSHOT_PROTOCOL", *v,
          "auto (snapshot-v2, falling back to snapshot-v1), 2 or 1");
    }
  }
  if (auto v =
          multi ? std::nullopt : LookupTrimmed(env, "KV_INDEXER_DP_RANK")) {
    absl::StatusOr<uint32_t> rank = ParseUint32("KV_INDEXER_DP_RANK", *v);
    if (!rank.ok()) return rank.status();
    config.dp_rank = *rank;
  }
  if (auto v = LookupTrimmed(env, "KV_INDEXER_SEQUENCE_GATE")) {
    const std::string lower = absl::AsciiStrToLower(*v);
    if (lower == "auto") {
      config.sequence_gate = SequenceGate::kAuto;
    } else if (lower == "on") {
      config.sequence_gate = SequenceGate::kOn;
    } else if (lower == "off") {
      config.sequence_gate = SequenceGate::kOff;
    } else {
      return InvalidEnvValue("KV_INDEXER_SEQUENCE_GATE", *v,
                             "auto, on or off, any case");
    }
  }
  if (auto v = LookupTrimmed(env, "KV_INDEXER_LIVE_BUFFER_BATCHES")) {
    absl::StatusOr<uint32_t> batches =
        ParseEnvUint32("KV_INDEXER_LIVE_BUFFER_BATCHES", *v,
                       Uint32Syntax{.min = 1, .allow_plus_sign = true},
                       "a positive integer (1..4294967295), for example 4096");
    if (!batches.ok()) return batches.status();
    config.live_buffer_batches = *batches;
  }
  if (auto v = LookupTrimmed(env, "KV_INDEXER_SNAPSHOT_CONCURRENCY")) {
    absl::StatusOr<uint32_t> limit = ParseEnvUint32(
        "KV_INDEXER_SNAPSHOT_CONCURRENCY", *v,
        Uint32Syntax{.min = 1, .max = 64, .allow_plus_sign = true},
        "an integer from 1 to 64, for example 4");
    if (!limit.ok()) return limit.status();
    config.snapshot_concurrency = *limit;
  }
  if (auto v = LookupTrimmed(env, "KV_INDEXER_HEARTBEAT_TTL_MS")) {
    absl::StatusOr<uint32_t> ttl = ParseEnvUint32(
        "KV_INDEXER_HEARTBEAT_TTL_MS", *v, kUint32Syntax,
        "milliseconds as an unsigned 32-bit integer (0..4294967295; 0 "
        "disables heartbeats), for example 30000");
    if (!ttl.ok()) return ttl.status();
    config.heartbeat_ttl = std::chrono::milliseconds(*ttl);
  }
  if (auto v = LookupTrimmed(env, "KV_INDEXER_RESYNC_CLEAR_AFTER_MS")) {
    absl::StatusOr<uint32_t> after = ParseEnvUint32(
        "KV_INDEXER_RESYNC_CLEAR_AFTER_MS", *v, kUint32Syntax,
        "milliseconds as an unsigned 32-bit integer (0..4294967295; 0 clears "
        "at the first failed attempt), for example 10000");
    if (!after.ok()) return after.status();
    config.resync_clear_after = std::chrono::milliseconds(*after);
  }
  absl::StatusOr<ClientSecurity> security = LoadClientSecurity(env);
  if (!security.ok()) return security.status();
  config.security = *std::move(security);
  if (auto v = LookupTrimmed(env, "KV_INDEXER_BRIDGE_METRICS_ADDR")) {
    auto addr = ParseMetricsAddress("KV_INDEXER_BRIDGE_METRICS_ADDR", *v);
    if (!addr.ok()) return addr.status();
    config.metrics_addr = *std::move(addr);
  }
  return config;
}

std::string_view SinkName(Sink sink) {
  switch (sink) {
    case Sink::kGrpc:
      return "grpc";
    case Sink::kJetStream:
      return "jetstream";
  }
  return "grpc";
}

std::string_view SequenceGateName(SequenceGate gate) {
  switch (gate) {
    case SequenceGate::kAuto:
      return "auto";
    case SequenceGate::kOn:
      return "on";
    case SequenceGate::kOff:
      return "off";
  }
  return "auto";
}

std::string DescribeConfig(const BridgeConfig& config) {
  std::vector<std::string> tiers;
  for (Tier t : config.clear_tiers) tiers.emplace_back(TierName(t));
  std::string spec = "none (legacy)";
  if (config.cache_spec) {
    const auto& s = *config.cache_spec;
    spec = absl::StrCat("version=", s.version(), " components=", s.components(),
                        " swa_window_tokens=", s.swa_window_tokens(),
                        " full_tier_mask=", s.full_tier_mask(),
                        " swa_tier_mask=", s.swa_tier_mask(),
                        " mamba_tier_mask=", s.mamba_tier_mask());
  }
  std::string streams;
  for (const WorkerEntry& entry : config.workers) {
    absl::StrAppend(&streams, streams.empty() ? "" : ",",
                    DescribeStreamKey(entry));
  }
  if (!config.workers.empty()) {
    return absl::StrCat(
        "streams=", config.workers.size(), " [", streams,
        "] indexer_endpoint=\"", config.indexer_endpoint, "\" clear_tiers=[",
        absl::StrJoin(tiers, ","), "] cache_spec: ", spec,
        " sequence_gate=", std::string(SequenceGateName(config.sequence_gate)),
        " live_buffer_batches=", config.live_buffer_batches,
        " snapshot_concurrency=", config.snapshot_concurrency,
        " heartbeat_ttl_ms=", config.heartbeat_ttl.count(),
        " resync_clear_after_ms=", config.resync_clear_after.count(),
        " tls_ca=", config.security.root_certs_pem.empty() ? "unset" : "set",
        " write_token=", config.security.has_write_token() ? "set" : "unset");
  }
  return absl::StrCat(
      "worker_id=\"", config.worker_id, "\" worker_address=\"",
      config.worker_address, "\" sink=", std::string(SinkName(config.sink)),
      config.event_log.has_value()
          ? absl::StrCat(" nats_stream=\"", config.event_log->stream, "\"")
          : absl::StrCat(" indexer_endpoint=\"", config.indexer_endpoint, "\""),
      " event_endpoint=\"", config.event_endpoint, "\" topic=\"",
      config.event_topic, "\" clear_tiers=[", absl::StrJoin(tiers, ","),
      "] cache_spec: ", spec, " replay_endpoint=\"", config.replay_endpoint,
      "\" snapshot_endpoint=\"", config.snapshot_endpoint,
      "\" snapshot_protocol=",
      std::string(SnapshotProtocolName(config.snapshot_protocol)),
      " sequence_gate=", std::string(SequenceGateName(config.sequence_gate)),
      " live_buffer_batches=", config.live_buffer_batches,
      " heartbeat_ttl_ms=", config.heartbeat_ttl.count(),
      " resync_clear_after_ms=", config.resync_clear_after.count(),
      " tls_ca=", config.security.root_certs_pem.empty() ? "unset" : "set",
      " tls_client_cert=",
      config.security.client_cert_pem.empty() ? "unset" : "set",
      " write_token=", config.security.has_write_token() ? "set" : "unset");
}

std::string BridgeUsage() {
  return R"(kv-indexer-bridge: follows one SGLang worker's ZMQ KV-event stream and applies
it to kv-indexer-server over gRPC (kv_indexer.v1 ApplyExternalKvBatch).

Usage: kv-indexer-bridge [--help]
All configuration comes from the environment. Run one bridge per worker and
per data-parallel rank (each rank publishes on base port + rank).

Variable                        Default               Meaning
KV_INDEXER_WORKERS_JSON         unset                 JSON array of workers: one process
                                                      follows every listed stream (keys
                                                      in docs/bridge-events.md); the
                                                      single-worker variables are then
                                                      ignored. Invalid: exit 2.
KV_INDEXER_WORKER_ID            (required)            Id of this worker event stream
                                                      (not read with WORKERS_JSON).
KV_INDEXER_WORKER_ADDRESS       ""                    Router-facing worker URL; must equal
                                                      the URL registered with sgl-router.
KV_INDEXER_ENDPOINT             http://[::1]:50051    Indexer: http://host:port,
                                                      https://host:port or unix:/path.
KV_INDEXER_SINK                 grpc                  grpc: send to KV_INDEXER_ENDPOINT;
                                                      jetstream: append to the fleet's
                                                      event log on NATS JetStream, set up
                                                      by the NATS variables below
                                                      (docs/fleet.md).
KV_INDEXER_NATS_URL             unset                 jetstream: comma-separated nats://,
                                                      tls://, ws:// or wss:// URLs
                                                      (required).
KV_INDEXER_NATS_CREDS_FILE      unset                 jetstream: NATS .creds file; not
                                                      with the token file.
KV_INDEXER_NATS_TOKEN_FILE      unset                 jetstream: file holding a NATS token.
KV_INDEXER_NATS_TLS_CA_FILE     unset                 jetstream: PEM roots for the NATS
                                                      servers (turns TLS on).
KV_INDEXER_NATS_TLS_CERT_FILE   unset                 jetstream: PEM client certificate and
KV_INDEXER_NATS_TLS_KEY_FILE    unset                 key for NATS (both or neither).
KV_INDEXER_NATS_TIMEOUT_MS      5000                  jetstream: ms to connect and per
                                                      JetStream request (100..600000).
KV_INDEXER_NATS_STREAM          KVINDEXER_EVENTS      jetstream: the event log's stream.
KV_INDEXER_NATS_SUBJECT_PREFIX  kvindexer             jetstream: subject prefix of records.
KV_INDEXER_NATS_REPLICAS        1                     jetstream: copies of the stream in the
                                                      cluster (1..5).
KV_INDEXER_NATS_DEDUP_WINDOW_MS 120000                jetstream: ms the stream remembers
                                                      de-duplication ids (1000..86400000).
SGLANG_KV_EVENT_ENDPOINT        tcp://127.0.0.1:5557  SGLang PUB endpoint (we connect SUB).
SGLANG_KV_EVENT_TOPIC           ""                    Subscription prefix ("" = all).
KV_INDEXER_CLEAR_TIERS          HBM,DRAM,SSD          Tiers cleared by AllBlocksCleared;
                                                      set but empty = clear nothing.
KV_INDEXER_CACHE_COMPONENTS     unset (legacy)        full, swa, mamba (FULL always added).
KV_INDEXER_SWA_WINDOW_TOKENS    0                     uint32; required (>0) with swa.
KV_INDEXER_FULL_TIERS           HBM,DRAM              Servable tiers per component
KV_INDEXER_SWA_TIERS            HBM,DRAM              (read only with components).
KV_INDEXER_MAMBA_TIERS          HBM,DRAM
KV_INDEXER_CACHE_SPEC_VERSION   1                     uint32, sent unchanged.
KV_INDEXER_LOG_LEVEL            info                  trace, debug, info, warn, error,
                                                      critical, off.
KV_INDEXER_STATS_INTERVAL_SECS  30                    Period of the INFO stats line; 0 = only
                                                      at shutdown.
SGLANG_KV_REPLAY_ENDPOINT       unset                 SGLang replay ROUTER endpoint
                                                      (replay_endpoint; DP rank: base port
                                                      + rank, like the event endpoint).
SGLANG_KV_SNAPSHOT_ENDPOINT     unset                 SGLang snapshot ROUTER endpoint
                                                      (snapshot_endpoint; same rank rule).
SGLANG_KV_SNAPSHOT_PROTOCOL     auto                  auto: snapshot-v2 (tier-exact), falling
                                                      back to snapshot-v1 (every block at
                                                      HBM) when the publisher refuses v2;
                                                      2 or 1: that protocol only.
KV_INDEXER_DP_RANK              0                     uint32: this publisher's DP rank, which
                                                      a snapshot header must name.
KV_INDEXER_SEQUENCE_GATE        auto                  auto, on, off: gated recovery with the
                                                      server's sequence gate (auto falls
                                                      back to legacy when the server lacks
                                                      it; on makes that an exit 1).
KV_INDEXER_LIVE_BUFFER_BATCHES  4096                  Live batches buffered while the bridge
                                                      waits on the server (positive).
KV_INDEXER_SNAPSHOT_CONCURRENCY 4                     With WORKERS_JSON: snapshot fetches
                                                      and their installs running at once
                                                      across the streams (1..64).
KV_INDEXER_HEARTBEAT_TTL_MS     30000                 Worker liveness: while a TCP connect to
                                                      the host:port of the worker address
                                                      succeeds, a heartbeat every TTL/3
                                                      (at least 100 ms) asks the server to
                                                      keep the worker for this long; 0 = no
                                                      heartbeats.
KV_INDEXER_RESYNC_CLEAR_AFTER_MS 10000                When resynchronisation attempts keep
                                                      failing this long, the worker's
                                                      placement is cleared at the server
                                                      (degraded) until one succeeds; 0 =
                                                      at the first failed attempt.
KV_INDEXER_TLS_CA_FILE          unset                 PEM roots for the indexer's
                                                      certificate; turns TLS on.
KV_INDEXER_TLS_CLIENT_CERT_FILE unset                 PEM client certificate and key for
KV_INDEXER_TLS_CLIENT_KEY_FILE  unset                 mutual TLS (both or neither).
KV_INDEXER_TLS_SERVER_NAME      unset                 Name checked in the server
                                                      certificate instead of the host.
KV_INDEXER_WRITE_TOKEN_FILE     unset                 File holding the write token, sent
                                                      as `authorization: Bearer` on every
                                                      call (docs/security.md).
KV_INDEXER_BRIDGE_METRICS_ADDR  unset                 host:port of /metrics, /healthz and
                                                      /readyz (port 0 picks a free port,
                                                      logged as "metrics http addr=").

Tier names (case-insensitive): HBM/GPU, DRAM/CPU/CPU_PINNED, SSD/DISK.
Cache-spec variables are trimmed and a blank value counts as unset.

Exit status: 0 after SIGINT/SIGTERM; 1 when the indexer rejects an apply with
a permanent status (e.g. INVALID_ARGUMENT; FAILED_PRECONDITION from the
sequence gate is not permanent: the bridge resynchronises); 2 on a
configuration error or a bad command line. Transient errors are retried:
RPCs after 100 ms doubling to 2 s while events keep being buffered, a failed
resynchronisation after 500 ms doubling to 10 s.
)";
}

}  // namespace kvindexer::bridge
