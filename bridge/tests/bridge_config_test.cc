// Configuration (docs/bridge-events.md, "Configuration"): defaults, trimming,
// aliases and startup validation (B16, B19, B20 and the list of
// "Configuration > Startup validation").
#include "bridge/bridge_config.h"

#include <map>
#include <string>

#include "bridge/cache_names.h"
#include "common/indexer_endpoint.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

EnvLookup Env(std::map<std::string, std::string> vars) {
  return MapEnvironment({vars.begin(), vars.end()});
}

BridgeConfig MustLoad(std::map<std::string, std::string> vars) {
  absl::StatusOr<BridgeConfig> config = LoadBridgeConfig(Env(std::move(vars)));
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? *config : BridgeConfig{};
}

std::string LoadError(std::map<std::string, std::string> vars) {
  absl::StatusOr<BridgeConfig> config = LoadBridgeConfig(Env(std::move(vars)));
  EXPECT_FALSE(config.ok());
  return config.ok() ? "" : std::string(config.status().message());
}

TEST(BridgeConfig, Defaults) {
  BridgeConfig c = MustLoad({{"KV_INDEXER_WORKER_ID", "worker-0"}});
  EXPECT_EQ(c.worker_id, "worker-0");
  EXPECT_EQ(c.worker_address, "");
  EXPECT_EQ(c.indexer_endpoint, "http://[::1]:50051");
  EXPECT_EQ(c.event_endpoint, "tcp://127.0.0.1:5557");
  EXPECT_EQ(c.event_topic, "");
  EXPECT_THAT(c.clear_tiers, ElementsAre(Tier::kHbm, Tier::kDram, Tier::kSsd));
  EXPECT_FALSE(c.cache_spec.has_value());
  EXPECT_EQ(c.log_level, spdlog::level::info);
  EXPECT_EQ(c.stats_interval.count(), 30);
  EXPECT_EQ(c.replay_endpoint, "");
  EXPECT_EQ(c.snapshot_endpoint, "");
  EXPECT_EQ(c.sequence_gate, SequenceGate::kAuto);
  EXPECT_EQ(c.live_buffer_batches, 4096u);
  EXPECT_EQ(c.heartbeat_ttl.count(), 30000);
}

// "Recovery > Variables": endpoints as set, the gate mode and the live
// buffer size validated at startup.
TEST(BridgeConfig, RecoveryVariables) {
  BridgeConfig c =
      MustLoad({{"KV_INDEXER_WORKER_ID", "w"},
                {"SGLANG_KV_REPLAY_ENDPOINT", "tcp://127.0.0.1:5568"},
                {"SGLANG_KV_SNAPSHOT_ENDPOINT", "tcp://127.0.0.1:5569"},
                {"KV_INDEXER_SEQUENCE_GATE", " ON "},
                {"KV_INDEXER_LIVE_BUFFER_BATCHES", "1"},
                {"KV_INDEXER_DP_RANK", "3"}});
  EXPECT_EQ(c.dp_rank, 3u);
  EXPECT_EQ(c.replay_endpoint, "tcp://127.0.0.1:5568");
  EXPECT_EQ(c.snapshot_endpoint, "tcp://127.0.0.1:5569");
  EXPECT_EQ(c.sequence_gate, SequenceGate::kOn);
  EXPECT_EQ(c.live_buffer_batches, 1u);
  EXPECT_EQ(MustLoad({{"KV_INDEXER_WORKER_ID", "w"},
                      {"KV_INDEXER_SEQUENCE_GATE", "off"}})
                .sequence_gate,
            SequenceGate::kOff);
  EXPECT_EQ(MustLoad({{"KV_INDEXER_WORKER_ID", "w"},
                      {"KV_INDEXER_SEQUENCE_GATE", "auto"}})
                .sequence_gate,
            SequenceGate::kAuto);
  // Empty endpoints mean unset; a blank gate or buffer size is the default.
  c = MustLoad({{"KV_INDEXER_WORKER_ID", "w"},
                {"SGLANG_KV_REPLAY_ENDPOINT", ""},
                {"KV_INDEXER_SEQUENCE_GATE", " "},
                {"KV_INDEXER_LIVE_BUFFER_BATCHES", ""}});
  EXPECT_EQ(c.replay_endpoint, "");
  EXPECT_EQ(c.sequence_gate, SequenceGate::kAuto);
  EXPECT_EQ(c.live_buffer_batches, 4096u);
}

TEST(BridgeConfig, RecoveryVariablesValidated) {
  const std::string w = "KV_INDEXER_WORKER_ID";
  std::string error =
      LoadError({{w, "w"}, {"KV_INDEXER_SEQUENCE_GATE", "yes"}});
  EXPECT_THAT(error, HasSubstr("KV_INDEXER_SEQUENCE_GATE=\"yes\""));
  EXPECT_THAT(error, HasSubstr("auto, on or off"));
  for (const char* bad : {"0", "-1", "many", "4294967296"}) {
    error = LoadError({{w, "w"}, {"KV_INDEXER_LIVE_BUFFER_BATCHES", bad}});
    EXPECT_THAT(error, HasSubstr("KV_INDEXER_LIVE_BUFFER_BATCHES"));
    EXPECT_THAT(error, HasSubstr("positive integer"));
  }
  EXPECT_THAT(LoadError({{w, "w"}, {"KV_INDEXER_DP_RANK", "-1"}}),
              HasSubstr("KV_INDEXER_DP_RANK"));
}

// KV_INDEXER_SNAPSHOT_CONCURRENCY: 4 by default, 1..64; anything else names
// the variable, the value and the range.
TEST(BridgeConfig, SnapshotConcurrency) {
  const std::string w = "KV_INDEXER_WORKER_ID";
  const std::string var = "KV_INDEXER_SNAPSHOT_CONCURRENCY";
  EXPECT_EQ(MustLoad({{w, "w"}}).snapshot_concurrency, 4u);
  EXPECT_EQ(MustLoad({{w, "w"}, {var, "1"}}).snapshot_concurrency, 1u);
  EXPECT_EQ(MustLoad({{w, "w"}, {var, " 64 "}}).snapshot_concurrency, 64u);
  for (const char* bad : {"0", "65", "-1", "four", "4294967296"}) {
    const std::string error = LoadError({{w, "w"}, {var, bad}});
    EXPECT_THAT(error, HasSubstr(var + "=\"" + bad + "\"")) << bad;
    EXPECT_THAT(error, HasSubstr("1 to 64")) << bad;
  }
}

// SGLANG_KV_SNAPSHOT_PROTOCOL: auto by default; auto, 2 or 1, trimmed and
// any case; blank is the default; anything else names the variable.
TEST(BridgeConfig, SnapshotProtocol) {
  const std::string w = "KV_INDEXER_WORKER_ID";
  const std::string protocol = "SGLANG_KV_SNAPSHOT_PROTOCOL";
  EXPECT_EQ(MustLoad({{w, "w"}}).snapshot_protocol, SnapshotProtocol::kAuto);
  EXPECT_EQ(MustLoad({{w, "w"}, {protocol, " AUTO "}}).snapshot_protocol,
            SnapshotProtocol::kAuto);
  EXPECT_EQ(MustLoad({{w, "w"}, {protocol, "2"}}).snapshot_protocol,
            SnapshotProtocol::kV2);
  EXPECT_EQ(MustLoad({{w, "w"}, {protocol, " 1"}}).snapshot_protocol,
            SnapshotProtocol::kV1);
  EXPECT_EQ(MustLoad({{w, "w"}, {protocol, " "}}).snapshot_protocol,
            SnapshotProtocol::kAuto);
  for (const char* bad : {"3", "v2", "0", "snapshot-v1", "1,2"}) {
    const std::string error = LoadError({{w, "w"}, {protocol, bad}});
    EXPECT_THAT(error, HasSubstr(protocol + "=\"" + bad + "\"")) << bad;
    EXPECT_THAT(error, HasSubstr("auto (snapshot-v2, falling back to "
                                 "snapshot-v1), 2 or 1"))
        << bad;
  }
  EXPECT_THAT(DescribeConfig(MustLoad({{w, "w"}, {protocol, "1"}})),
              HasSubstr("snapshot_protocol=1"));
}

// "Recovery > Worker liveness": KV_INDEXER_HEARTBEAT_TTL_MS is unsigned
// milliseconds, 0 disables, blank is the default, anything else fails.
TEST(BridgeConfig, HeartbeatTtl) {
  const std::string w = "KV_INDEXER_WORKER_ID";
  const std::string ttl = "KV_INDEXER_HEARTBEAT_TTL_MS";
  EXPECT_EQ(MustLoad({{w, "w"}, {ttl, "300"}}).heartbeat_ttl.count(), 300);
  EXPECT_EQ(MustLoad({{w, "w"}, {ttl, " 0 "}}).heartbeat_ttl.count(), 0);
  EXPECT_EQ(MustLoad({{w, "w"}, {ttl, "4294967295"}}).heartbeat_ttl.count(),
            4294967295);
  EXPECT_EQ(MustLoad({{w, "w"}, {ttl, " "}}).heartbeat_ttl.count(), 30000);
  for (const char* bad : {"-1", "30s", "1e3", "4294967296", "0x10", "3 0"}) {
    const std::string error = LoadError({{w, "w"}, {ttl, bad}});
    EXPECT_THAT(error, HasSubstr("KV_INDEXER_HEARTBEAT_TTL_MS")) << bad;
    EXPECT_THAT(error, HasSubstr("0 disables heartbeats")) << bad;
  }
  EXPECT_THAT(DescribeConfig(MustLoad({{w, "w"}, {ttl, "300"}})),
              HasSubstr("heartbeat_ttl_ms=300"));
}

// KV_INDEXER_SINK (docs/fleet.md, "Configuration"): grpc by default; with
// jetstream the KV_INDEXER_NATS_* variables are read and their errors name
// them.
TEST(BridgeConfig, Sink) {
  const std::string w = "KV_INDEXER_WORKER_ID";
  const std::string sink = "KV_INDEXER_SINK";
  const std::string url = "KV_INDEXER_NATS_URL";
  const BridgeConfig defaults = MustLoad({{w, "w"}});
  EXPECT_EQ(defaults.sink, Sink::kGrpc);
  EXPECT_FALSE(defaults.event_log.has_value());
  EXPECT_EQ(MustLoad({{w, "w"}, {sink, " GRPC "}}).sink, Sink::kGrpc);
  // gRPC mode reads no NATS variable, even a bad one.
  EXPECT_FALSE(MustLoad({{w, "w"}, {sink, "grpc"}, {url, "http://x"}})
                   .event_log.has_value());

  const BridgeConfig fleet = MustLoad({{w, "w"},
                                       {sink, "JetStream"},
                                       {url, "nats://127.0.0.1:4222"},
                                       {"KV_INDEXER_NATS_STREAM", "EVENTS_A"}});
  EXPECT_EQ(fleet.sink, Sink::kJetStream);
  ASSERT_TRUE(fleet.event_log.has_value());
  EXPECT_EQ(fleet.event_log->stream, "EVENTS_A");
  EXPECT_EQ(fleet.event_log->nats.urls.size(), 1u);
  EXPECT_THAT(DescribeConfig(fleet), HasSubstr("sink=jetstream"));
  EXPECT_THAT(DescribeConfig(fleet), HasSubstr("EVENTS_A"));
  EXPECT_THAT(DescribeConfig(defaults), HasSubstr("sink=grpc"));

  for (const char* bad : {"nats", "grpc,jetstream", "kafka"}) {
    const std::string error = LoadError({{w, "w"}, {sink, bad}});
    EXPECT_THAT(error, HasSubstr("KV_INDEXER_SINK")) << bad;
    EXPECT_THAT(error, HasSubstr("jetstream")) << bad;
  }
  EXPECT_THAT(LoadError({{w, "w"}, {sink, "jetstream"}}),
              HasSubstr("KV_INDEXER_NATS_URL"));
  EXPECT_THAT(LoadError({{w, "w"},
                         {sink, "jetstream"},
                         {url, "nats://127.0.0.1:4222"},
                         {"KV_INDEXER_NATS_REPLICAS", "7"}}),
              HasSubstr("KV_INDEXER_NATS_REPLICAS"));
}

TEST(BridgeConfig, MetricsAddr) {
  const std::string w = "KV_INDEXER_WORKER_ID";
  const std::string var = "KV_INDEXER_BRIDGE_METRICS_ADDR";
  EXPECT_FALSE(MustLoad({{w, "w"}}).metrics_addr.has_value());
  EXPECT_FALSE(MustLoad({{w, "w"}, {var, " "}}).metrics_addr.has_value());
  const BridgeConfig config = MustLoad({{w, "w"}, {var, " [::1]:9465 "}});
  ASSERT_TRUE(config.metrics_addr.has_value());
  EXPECT_EQ(config.metrics_addr->host, "::1");
  EXPECT_EQ(config.metrics_addr->port, 9465);
  EXPECT_THAT(LoadError({{w, "w"}, {var, "host.example:1"}}),
              HasSubstr("KV_INDEXER_BRIDGE_METRICS_ADDR=\"host.example:1\""));
}

TEST(BridgeConfig, WorkerIdRequiredButMayBeEmpty) {
  EXPECT_THAT(LoadError({}), HasSubstr("KV_INDEXER_WORKER_ID"));
  EXPECT_EQ(MustLoad({{"KV_INDEXER_WORKER_ID", ""}}).worker_id, "");
}

TEST(BridgeConfig, RawVariablesAreNotTrimmed) {
  BridgeConfig c = MustLoad({{"KV_INDEXER_WORKER_ID", " w "},
                             {"KV_INDEXER_WORKER_ADDRESS", " http://a:1 "},
                             {"KV_INDEXER_ENDPOINT", ""},
                             {"SGLANG_KV_EVENT_ENDPOINT", "tcp://h:5567"},
                             {"SGLANG_KV_EVENT_TOPIC", " kv-events"}});
  EXPECT_EQ(c.worker_id, " w ");
  EXPECT_EQ(c.worker_address, " http://a:1 ");
  EXPECT_EQ(c.indexer_endpoint, "");
  EXPECT_EQ(c.event_endpoint, "tcp://h:5567");
  EXPECT_EQ(c.event_topic, " kv-events");
}

TEST(BridgeConfig, B16ClearTiers) {
  EXPECT_THAT(MustLoad({{"KV_INDEXER_WORKER_ID", "w"},
                        {"KV_INDEXER_CLEAR_TIERS", "HBM,DRAM,SSD"}})
                  .clear_tiers,
              ElementsAre(Tier::kHbm, Tier::kDram, Tier::kSsd));
  EXPECT_THAT(
      MustLoad({{"KV_INDEXER_WORKER_ID", "w"},
                {"KV_INDEXER_CLEAR_TIERS", " GPU , CPU_PINNED , DISK "}})
          .clear_tiers,
      ElementsAre(Tier::kHbm, Tier::kDram, Tier::kSsd));
  std::string error = LoadError(
      {{"KV_INDEXER_WORKER_ID", "w"}, {"KV_INDEXER_CLEAR_TIERS", "HBM,NVME"}});
  EXPECT_THAT(error, HasSubstr("KV_INDEXER_CLEAR_TIERS"));
  EXPECT_THAT(error, HasSubstr("NVME"));
  EXPECT_THAT(error, HasSubstr("HBM (or GPU)"));
}

TEST(BridgeConfig, ClearTiersEmptyAndEmptyItems) {
  EXPECT_THAT(
      MustLoad({{"KV_INDEXER_WORKER_ID", "w"}, {"KV_INDEXER_CLEAR_TIERS", ""}})
          .clear_tiers,
      IsEmpty());
  EXPECT_THAT(MustLoad({{"KV_INDEXER_WORKER_ID", "w"},
                        {"KV_INDEXER_CLEAR_TIERS", "ssd,,cpu, "}})
                  .clear_tiers,
              ElementsAre(Tier::kSsd, Tier::kDram));
}

TEST(BridgeConfig, B20NameTables) {
  EXPECT_EQ(TierFromConfigName("HBM"), Tier::kHbm);
  EXPECT_EQ(TierFromConfigName("gpu"), Tier::kHbm);
  EXPECT_EQ(TierFromConfigName("CPU_PINNED"), Tier::kDram);
  EXPECT_EQ(TierFromConfigName("Cpu"), Tier::kDram);
  EXPECT_EQ(TierFromConfigName("disk"), Tier::kSsd);
  EXPECT_EQ(TierFromConfigName("NVME"), std::nullopt);
  EXPECT_EQ(ComponentBitFromName("full"), 1u);
  EXPECT_EQ(ComponentBitFromName("swa"), 2u);
  EXPECT_EQ(ComponentBitFromName("MAMBA"), 4u);
  EXPECT_EQ(ComponentBitFromName("bogus"), std::nullopt);
  // Event mediums are exact.
  EXPECT_EQ(TierFromMedium("GPU"), Tier::kHbm);
  EXPECT_EQ(TierFromMedium("CPU_PINNED"), Tier::kDram);
  EXPECT_EQ(TierFromMedium("DISK"), Tier::kSsd);
  EXPECT_EQ(TierFromMedium("CPU"), std::nullopt);
  EXPECT_EQ(TierFromMedium("EXTERNAL"), std::nullopt);
  EXPECT_EQ(TierFromMedium("gpu"), std::nullopt);
}

TEST(BridgeConfig, CacheSpecFullSwa) {
  BridgeConfig c = MustLoad({{"KV_INDEXER_WORKER_ID", "w"},
                             {"KV_INDEXER_CACHE_COMPONENTS", " swa "},
                             {"KV_INDEXER_SWA_WINDOW_TOKENS", " 4096 "},
                             {"KV_INDEXER_FULL_TIERS", "HBM"},
                             {"KV_INDEXER_SWA_TIERS", " hbm , dram "}});
  ASSERT_TRUE(c.cache_spec.has_value());
  EXPECT_EQ(c.cache_spec->version(), 1u);
  EXPECT_EQ(c.cache_spec->components(), 3u);  // FULL always added
  EXPECT_EQ(c.cache_spec->swa_window_tokens(), 4096u);
  EXPECT_EQ(c.cache_spec->full_tier_mask(), 0x2u);
  EXPECT_EQ(c.cache_spec->swa_tier_mask(), 0x6u);
  EXPECT_EQ(c.cache_spec->mamba_tier_mask(), 0x6u);
}

TEST(BridgeConfig, CacheSpecFullMambaAndVersion) {
  BridgeConfig c = MustLoad({{"KV_INDEXER_WORKER_ID", "w"},
                             {"KV_INDEXER_CACHE_COMPONENTS", "full,mamba"},
                             {"KV_INDEXER_MAMBA_TIERS", "SSD,GPU"},
                             {"KV_INDEXER_CACHE_SPEC_VERSION", "7"}});
  ASSERT_TRUE(c.cache_spec.has_value());
  EXPECT_EQ(c.cache_spec->components(), 5u);
  EXPECT_EQ(c.cache_spec->version(), 7u);  // not capped by the bridge
  EXPECT_EQ(c.cache_spec->mamba_tier_mask(), 0xau);
  EXPECT_EQ(c.cache_spec->full_tier_mask(), 0x6u);
}

TEST(BridgeConfig, BlankComponentsCountAsUnset) {
  BridgeConfig c = MustLoad({{"KV_INDEXER_WORKER_ID", "w"},
                             {"KV_INDEXER_CACHE_COMPONENTS", "  "},
                             {"KV_INDEXER_FULL_TIERS", "NVME"}});
  EXPECT_FALSE(c.cache_spec.has_value());  // tiers not read without components
}

TEST(BridgeConfig, StartupValidation) {
  const std::string w = "KV_INDEXER_WORKER_ID";
  EXPECT_THAT(
      LoadError({{w, "w"}, {"KV_INDEXER_CACHE_COMPONENTS", "full,bogus"}}),
      HasSubstr("bogus"));
  // The window must parse even without SWA.
  EXPECT_THAT(LoadError({{w, "w"}, {"KV_INDEXER_SWA_WINDOW_TOKENS", "abc"}}),
              HasSubstr("KV_INDEXER_SWA_WINDOW_TOKENS=\"abc\""));
  EXPECT_THAT(
      LoadError({{w, "w"}, {"KV_INDEXER_SWA_WINDOW_TOKENS", "4294967296"}}),
      HasSubstr("unsigned 32-bit"));
  EXPECT_THAT(LoadError({{w, "w"}, {"KV_INDEXER_SWA_WINDOW_TOKENS", "-1"}}),
              HasSubstr("KV_INDEXER_SWA_WINDOW_TOKENS"));
  EXPECT_THAT(
      LoadError({{w, "w"}, {"KV_INDEXER_CACHE_COMPONENTS", "full,swa"}}),
      HasSubstr("KV_INDEXER_SWA_WINDOW_TOKENS"));
  EXPECT_THAT(LoadError({{w, "w"},
                         {"KV_INDEXER_CACHE_COMPONENTS", "full,swa"},
                         {"KV_INDEXER_SWA_WINDOW_TOKENS", "0"}}),
              HasSubstr("at least 1 token"));
  EXPECT_THAT(LoadError({{w, "w"}, {"KV_INDEXER_CACHE_SPEC_VERSION", "v1"}}),
              HasSubstr("KV_INDEXER_CACHE_SPEC_VERSION"));
  EXPECT_THAT(LoadError({{w, "w"},
                         {"KV_INDEXER_CACHE_COMPONENTS", "full"},
                         {"KV_INDEXER_SWA_TIERS", "HBM,TAPE"}}),
              HasSubstr("KV_INDEXER_SWA_TIERS"));
  EXPECT_THAT(LoadError({{w, "w"}, {"KV_INDEXER_LOG_LEVEL", "loud"}}),
              HasSubstr("KV_INDEXER_LOG_LEVEL"));
  EXPECT_THAT(LoadError({{w, "w"}, {"KV_INDEXER_STATS_INTERVAL_SECS", "soon"}}),
              HasSubstr("KV_INDEXER_STATS_INTERVAL_SECS"));
  // SWA window accepted without SWA; a leading '+' is accepted.
  EXPECT_FALSE(MustLoad({{w, "w"}, {"KV_INDEXER_SWA_WINDOW_TOKENS", "+12"}})
                   .cache_spec.has_value());
}

TEST(BridgeConfig, InvalidEndpointIsNotAStartupError) {
  BridgeConfig c = MustLoad({{"KV_INDEXER_WORKER_ID", "w"},
                             {"KV_INDEXER_ENDPOINT", "not a uri"},
                             {"SGLANG_KV_EVENT_ENDPOINT", "bogus://x"}});
  EXPECT_EQ(c.indexer_endpoint, "not a uri");
}

TEST(BridgeConfig, LogLevelAndStatsInterval) {
  BridgeConfig c = MustLoad({{"KV_INDEXER_WORKER_ID", "w"},
                             {"KV_INDEXER_LOG_LEVEL", " DEBUG "},
                             {"KV_INDEXER_STATS_INTERVAL_SECS", "0"}});
  EXPECT_EQ(c.log_level, spdlog::level::debug);
  EXPECT_EQ(c.stats_interval.count(), 0);
  // The grammar shared with the server (common/log_setup.h).
  EXPECT_EQ(MustLoad({{"KV_INDEXER_WORKER_ID", "w"},
                      {"KV_INDEXER_LOG_LEVEL", "warning"}})
                .log_level,
            spdlog::level::warn);
  EXPECT_EQ(
      MustLoad({{"KV_INDEXER_WORKER_ID", "w"}, {"KV_INDEXER_LOG_LEVEL", " "}})
          .log_level,
      spdlog::level::info);
}

TEST(BridgeConfig, UsageListsEveryVariable) {
  const std::string usage = BridgeUsage();
  for (const char* name : {"KV_INDEXER_WORKER_ID",
                           "KV_INDEXER_WORKER_ADDRESS",
                           "KV_INDEXER_ENDPOINT",
                           "SGLANG_KV_EVENT_ENDPOINT",
                           "SGLANG_KV_EVENT_TOPIC",
                           "KV_INDEXER_CLEAR_TIERS",
                           "KV_INDEXER_CACHE_COMPONENTS",
                           "KV_INDEXER_SWA_WINDOW_TOKENS",
                           "KV_INDEXER_FULL_TIERS",
                           "KV_INDEXER_SWA_TIERS",
                           "KV_INDEXER_MAMBA_TIERS",
                           "KV_INDEXER_CACHE_SPEC_VERSION",
                           "KV_INDEXER_LOG_LEVEL",
                           "KV_INDEXER_STATS_INTERVAL_SECS",
                           "SGLANG_KV_REPLAY_ENDPOINT",
                           "SGLANG_KV_SNAPSHOT_ENDPOINT",
                           "SGLANG_KV_SNAPSHOT_PROTOCOL",
                           "KV_INDEXER_SEQUENCE_GATE",
                           "KV_INDEXER_LIVE_BUFFER_BATCHES",
                           "KV_INDEXER_DP_RANK",
                           "KV_INDEXER_HEARTBEAT_TTL_MS",
                           "KV_INDEXER_SINK"}) {
    EXPECT_THAT(usage, HasSubstr(name));
  }
}

TEST(IndexerEndpoint, AcceptedForms) {
  auto target = [](const char* e) {
    auto t = ParseIndexerEndpoint(e);
    EXPECT_TRUE(t.ok()) << e << ": " << t.status();
    return t.ok() ? *t : GrpcTarget{};
  };
  EXPECT_EQ(target("http://[::1]:50051").target, "[::1]:50051");
  EXPECT_EQ(target("http://127.0.0.1:50051").target, "127.0.0.1:50051");
  EXPECT_EQ(target("http://127.0.0.1:50051/").target, "127.0.0.1:50051");
  EXPECT_EQ(target("http://indexer.local").target, "indexer.local:80");
  EXPECT_FALSE(target("http://indexer.local:1").use_tls);
  GrpcTarget tls = target("https://indexer.example:8443");
  EXPECT_EQ(tls.target, "indexer.example:8443");
  EXPECT_TRUE(tls.use_tls);
  EXPECT_EQ(target("https://h").target, "h:443");
  EXPECT_EQ(target("unix:/tmp/kv.sock").target, "unix:/tmp/kv.sock");
  EXPECT_EQ(target("unix:///tmp/kv.sock").target, "unix:/tmp/kv.sock");
}

TEST(IndexerEndpoint, RejectedForms) {
  for (const char* e :
       {"", "127.0.0.1:50051", "grpc://h:1", "http://", "http://:50051",
        "http://h:", "http://h:0", "http://h:65536", "http://h:12x",
        "http://h:1/path", "http://[::1", "http://[]:1", "http://a b:1",
        "unix:", "not a uri", "http://u@h:1"}) {
    auto t = ParseIndexerEndpoint(e);
    EXPECT_FALSE(t.ok()) << e;
    if (!t.ok()) {
      EXPECT_THAT(std::string(t.status().message()), HasSubstr("accepted"));
    }
  }
}

// KV_INDEXER_WORKERS_JSON ("Many streams in one process"): the single-worker
// variables are not read (one warning names those set), the worker id is
// not required, and only the gRPC sink is accepted.
TEST(BridgeConfig, WorkersJsonReplacesTheSingleWorkerVariables) {
  const std::string workers =
      R"([{"worker_id":"a","worker_address":"http://h:1","event_endpoint":)"
      R"("tcp://h:2","unknown_key":1}])";
  BridgeConfig c = MustLoad({{"KV_INDEXER_WORKERS_JSON", workers},
                             {"SGLANG_KV_EVENT_TOPIC", "t"},
                             {"KV_INDEXER_DP_RANK", "not a number"}});
  ASSERT_EQ(c.workers.size(), 1u);
  EXPECT_EQ(c.workers[0].worker_id, "a");
  EXPECT_EQ(c.event_topic, "");
  EXPECT_EQ(c.dp_rank, 0u);
  ASSERT_EQ(c.warnings.size(), 2u);
  EXPECT_THAT(c.warnings[0], HasSubstr("unknown key \"unknown_key\""));
  EXPECT_THAT(c.warnings[1],
              HasSubstr("ignoring SGLANG_KV_EVENT_TOPIC, KV_INDEXER_DP_RANK"));
  EXPECT_THAT(DescribeConfig(c), HasSubstr("streams=1"));

  BridgeConfig blank = MustLoad(
      {{"KV_INDEXER_WORKERS_JSON", "  "}, {"KV_INDEXER_WORKER_ID", "w"}});
  EXPECT_TRUE(blank.workers.empty());
  EXPECT_TRUE(blank.warnings.empty());
  EXPECT_EQ(blank.worker_id, "w");

  EXPECT_THAT(LoadError({{"KV_INDEXER_WORKERS_JSON", workers},
                         {"KV_INDEXER_SINK", "jetstream"}}),
              HasSubstr("KV_INDEXER_SINK=jetstream cannot be combined"));
  EXPECT_THAT(LoadError({{"KV_INDEXER_WORKERS_JSON", "[]"}}),
              HasSubstr("invalid KV_INDEXER_WORKERS_JSON: "));
}

}  // namespace
}  // namespace kvindexer::bridge
