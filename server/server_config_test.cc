#include "server/server_config.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

EnvLookup FakeEnv(std::map<std::string, std::string> vars) {
  return MapEnvironment({vars.begin(), vars.end()});
}

std::string ErrorOf(std::map<std::string, std::string> vars) {
  auto config = LoadServerConfig(FakeEnv(std::move(vars)));
  EXPECT_FALSE(config.ok());
  if (config.ok()) return {};
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(config.status().message());
}

TEST(ServerConfigTest, DefaultsWhenNothingIsSet) {
  auto config = LoadServerConfig(FakeEnv({}));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->listen_addr, "[::1]:50051");
  EXPECT_EQ(config->prefix_query_max_inflight, 32u);
  EXPECT_EQ(config->backend, kDefaultBackendName);
  EXPECT_EQ(config->backend_path, "");
  EXPECT_EQ(config->log_level, spdlog::level::info);
}

TEST(ServerConfigTest, ReadsEveryVariable) {
  auto config = LoadServerConfig(FakeEnv({
      {"KV_INDEXER_LISTEN_ADDR", "127.0.0.1:6000"},
      {"KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT", "64"},
      {"KV_INDEXER_BACKEND", "/opt/x/kvindexer-backend-y.so"},
      {"KV_INDEXER_BACKEND_PATH", "/a:/b"},
      {"KV_INDEXER_LOG_LEVEL", "debug"},
  }));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->listen_addr, "127.0.0.1:6000");
  EXPECT_EQ(config->prefix_query_max_inflight, 64u);
  EXPECT_EQ(config->backend, "/opt/x/kvindexer-backend-y.so");
  EXPECT_EQ(config->backend_path, "/a:/b");
  EXPECT_EQ(config->log_level, spdlog::level::debug);
}

// Behaviour 51 (docs/contract.md, "Reference behaviours").
TEST(ServerConfigTest, PrefixQueryMaxInflight) {
  EXPECT_EQ(ParsePrefixQueryMaxInflight("64").value(), 64u);
  EXPECT_EQ(ParsePrefixQueryMaxInflight("1").value(), 1u);
  EXPECT_EQ(ParsePrefixQueryMaxInflight("4294967295").value(), 4294967295u);
  for (const char* bad : {"0", "many", "", "-1", "+", " 64", "64 ", "1.5",
                          "4294967296", "99999999999999999999", "0x10"}) {
    auto n = ParsePrefixQueryMaxInflight(bad);
    EXPECT_FALSE(n.ok()) << bad;
  }
}

TEST(ServerConfigTest, MaxInflightErrorsNameVariableValueAndAccepted) {
  EXPECT_THAT(ErrorOf({{"KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT", "0"}}),
              AllOf(HasSubstr("KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT"),
                    HasSubstr("\"0\""), HasSubstr("positive integer")));
  EXPECT_THAT(ErrorOf({{"KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT", "many"}}),
              AllOf(HasSubstr("KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT"),
                    HasSubstr("\"many\""), HasSubstr("positive integer")));
  EXPECT_THAT(ErrorOf({{"KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT", "6\xff"}}),
              AllOf(HasSubstr("KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT"),
                    HasSubstr("\"6\\xff\""), HasSubstr("not valid UTF-8"),
                    HasSubstr("positive integer")));
}

TEST(ServerConfigTest, ListenAddrAcceptsLiteralAddresses) {
  for (const char* good :
       {"[::1]:50051", "127.0.0.1:50051", "0.0.0.0:1", "[::]:65535",
        "[fe80::1:2]:80", "[::ffff:10.0.0.1]:9000", "10.1.2.3:0"}) {
    auto addr = ParseListenAddr(good);
    ASSERT_TRUE(addr.ok()) << good << ": " << addr.status();
    EXPECT_EQ(*addr, good);
  }
}

TEST(ServerConfigTest, ListenAddrRejectsHostnamesAndMalformedValues) {
  for (const char* bad : {"localhost:50051",
                          "indexer.svc:50051",
                          "::1:50051",
                          "[::1]",
                          "[::1]50051",
                          "[::1]:",
                          "127.0.0.1",
                          "127.0.0.1:",
                          "127.0.0.1:65536",
                          "127.0.0.1:-1",
                          "127.0.0.1:+80",
                          "127.0.0.1:8a",
                          "127.0.0.1: 80",
                          " 127.0.0.1:80",
                          "1.2.3:80",
                          "256.0.0.1:80",
                          "[127.0.0.1]:80",
                          "[localhost]:80",
                          "[fe80::1%eth0]:80",
                          ":50051",
                          "",
                          "http://1.2.3.4:5",
                          "127.0.0.1:99999999999999999999"}) {
    EXPECT_FALSE(ParseListenAddr(bad).ok()) << bad;
  }
}

TEST(ServerConfigTest, ListenAddrErrorNamesVariableValueAndAccepted) {
  EXPECT_THAT(ErrorOf({{"KV_INDEXER_LISTEN_ADDR", "localhost:50051"}}),
              AllOf(HasSubstr("KV_INDEXER_LISTEN_ADDR"),
                    HasSubstr("\"localhost:50051\""),
                    HasSubstr("literal IP address and port"),
                    HasSubstr("hostnames are not resolved")));
}

TEST(ServerConfigTest, BackendMustNotBeEmpty) {
  EXPECT_THAT(ErrorOf({{"KV_INDEXER_BACKEND", ""}}),
              AllOf(HasSubstr("KV_INDEXER_BACKEND"), HasSubstr("\"\""),
                    HasSubstr("backend name")));
  EXPECT_THAT(ErrorOf({{"KV_INDEXER_BACKEND_PATH", "/a\xc3"}}),
              HasSubstr("KV_INDEXER_BACKEND_PATH"));
}

TEST(ServerConfigTest, LogLevels) {
  EXPECT_EQ(ParseLogLevel("trace").value(), spdlog::level::trace);
  EXPECT_EQ(ParseLogLevel("debug").value(), spdlog::level::debug);
  EXPECT_EQ(ParseLogLevel("info").value(), spdlog::level::info);
  EXPECT_EQ(ParseLogLevel("WARN").value(), spdlog::level::warn);
  EXPECT_EQ(ParseLogLevel("error").value(), spdlog::level::err);
  EXPECT_THAT(ErrorOf({{"KV_INDEXER_LOG_LEVEL", "verbose"}}),
              AllOf(HasSubstr("KV_INDEXER_LOG_LEVEL"), HasSubstr("\"verbose\""),
                    HasSubstr("trace, debug, info, warn, error")));
  EXPECT_FALSE(ParseLogLevel("").ok());
  // Set but blank means the default, as for the bridge.
  auto blank = LoadServerConfig(FakeEnv({{"KV_INDEXER_LOG_LEVEL", " "}}));
  ASSERT_TRUE(blank.ok()) << blank.status();
  EXPECT_EQ(blank->log_level, spdlog::level::info);
}

TEST(ServerConfigTest, CommandLine) {
  const char* run[] = {"kv-indexer-server"};
  EXPECT_EQ(ParseCommandLine(run).value(), CommandLineAction::kRun);
  const char* help[] = {"kv-indexer-server", "--help"};
  EXPECT_EQ(ParseCommandLine(help).value(), CommandLineAction::kHelp);
  const char* short_help[] = {"kv-indexer-server", "-h"};
  EXPECT_EQ(ParseCommandLine(short_help).value(), CommandLineAction::kHelp);
  const char* unknown[] = {"kv-indexer-server", "--port=1"};
  auto action = ParseCommandLine(unknown);
  ASSERT_FALSE(action.ok());
  EXPECT_THAT(std::string(action.status().message()),
              AllOf(HasSubstr("\"--port=1\""), HasSubstr("--help")));
}

TEST(ServerConfigTest, UsageListsEveryVariableWithDefault) {
  const std::string usage = UsageText("kv-indexer-server");
  for (const char* needle :
       {"Usage: kv-indexer-server", "KV_INDEXER_LISTEN_ADDR", "[::1]:50051",
        "KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT", "32", "KV_INDEXER_BACKEND",
        "KV_INDEXER_BACKEND_PATH", "KV_INDEXER_LOG_LEVEL", "info"}) {
    EXPECT_THAT(usage, HasSubstr(needle));
  }
  EXPECT_THAT(usage, HasSubstr(std::string(kDefaultBackendName)));
}

// docs/contract.md, "Limits > Bounds": the five bound variables.
TEST(ServerConfigBoundsTest, DefaultsWhenUnset) {
  auto config = LoadServerConfig(FakeEnv({}));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->limits.max_worker_id_bytes, 256u);
  EXPECT_EQ(config->limits.max_worker_address_bytes, 2048u);
  EXPECT_EQ(config->limits.max_worker_epoch_bytes, 256u);
  EXPECT_EQ(config->limits.max_workers, 65536u);
  EXPECT_EQ(config->limits.max_prefix_answer_bytes, 4000000u);
  // Below gRPC's default receive limit of 4 MiB.
  EXPECT_LT(config->limits.max_prefix_answer_bytes, 4u * 1024 * 1024);
}

TEST(ServerConfigBoundsTest, ReadsEachVariable) {
  auto config = LoadServerConfig(FakeEnv({
      {"KV_INDEXER_MAX_WORKER_ID_BYTES", "64"},
      {"KV_INDEXER_MAX_WORKER_ADDRESS_BYTES", "512"},
      {"KV_INDEXER_MAX_WORKER_EPOCH_BYTES", "32"},
      {"KV_INDEXER_MAX_WORKERS", "100"},
      {"KV_INDEXER_MAX_PREFIX_ANSWER_BYTES", "2147483647"},
  }));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->limits.max_worker_id_bytes, 64u);
  EXPECT_EQ(config->limits.max_worker_address_bytes, 512u);
  EXPECT_EQ(config->limits.max_worker_epoch_bytes, 32u);
  EXPECT_EQ(config->limits.max_workers, 100u);
  EXPECT_EQ(config->limits.max_prefix_answer_bytes, 2147483647u);
}

TEST(ServerConfigBoundsTest, BadValuesNameTheVariable) {
  for (const char* var :
       {"KV_INDEXER_MAX_WORKER_ID_BYTES", "KV_INDEXER_MAX_WORKER_ADDRESS_BYTES",
        "KV_INDEXER_MAX_WORKER_EPOCH_BYTES", "KV_INDEXER_MAX_WORKERS",
        "KV_INDEXER_MAX_PREFIX_ANSWER_BYTES"}) {
    for (const char* bad :
         {"0", "many", "", "-1", " 5", "5 ", "1.5", "4294967296", "0x10"}) {
      EXPECT_THAT(ErrorOf({{var, bad}}),
                  AllOf(HasSubstr(var), HasSubstr(QuoteEnvValue(bad)),
                        HasSubstr("positive integer")))
          << var << "=" << bad;
    }
  }
  // An answer ceiling above INT_MAX could never be encoded.
  EXPECT_THAT(ErrorOf({{"KV_INDEXER_MAX_PREFIX_ANSWER_BYTES", "2147483648"}}),
              AllOf(HasSubstr("KV_INDEXER_MAX_PREFIX_ANSWER_BYTES"),
                    HasSubstr("1..2147483647")));
  EXPECT_TRUE(
      LoadServerConfig(FakeEnv({{"KV_INDEXER_MAX_WORKERS", "4294967295"}}))
          .ok());
}

TEST(ServerConfigBoundsTest, ThePlacementBound) {
  auto off = LoadServerConfig(FakeEnv({}));
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->limits.placement_bound.enabled());
  auto on = LoadServerConfig(
      FakeEnv({{"KV_INDEXER_MAX_PLACEMENTS", "20000000"},
               {"KV_INDEXER_MAX_PLACEMENTS_PER_WORKER", "4294967295"}}));
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_EQ(on->limits.placement_bound.max_placements, 20000000u);
  EXPECT_EQ(on->limits.placement_bound.max_per_worker, 4294967295u);
  for (const char* var :
       {"KV_INDEXER_MAX_PLACEMENTS", "KV_INDEXER_MAX_PLACEMENTS_PER_WORKER"}) {
    for (const char* bad : {"many", "-1", "4294967296", "1e6"}) {
      EXPECT_THAT(ErrorOf({{var, bad}}),
                  AllOf(HasSubstr(var), HasSubstr(QuoteEnvValue(bad)),
                        HasSubstr("0 (unbounded)")))
          << var << "=" << bad;
    }
  }
  EXPECT_FALSE(on->limits.placement_bound.index_bound_from_log);
  // A replica takes both; its index-wide evictions come from the log.
  const std::map<std::string, std::string> replica = {
      {"KV_INDEXER_EVENT_SOURCE", "jetstream"},
      {"KV_INDEXER_NATS_URL", "nats://127.0.0.1:4222"},
      {"KV_INDEXER_MAX_PLACEMENTS", "1000"},
      {"KV_INDEXER_MAX_PLACEMENTS_PER_WORKER", "100"}};
  auto on_replica = LoadServerConfig(FakeEnv(replica));
  ASSERT_TRUE(on_replica.ok()) << on_replica.status();
  EXPECT_EQ(on_replica->limits.placement_bound.max_placements, 1000u);
  EXPECT_EQ(on_replica->limits.placement_bound.max_per_worker, 100u);
  EXPECT_TRUE(on_replica->limits.placement_bound.index_bound_from_log);
}

TEST(ServerConfigBoundsTest, UsageListsTheBounds) {
  const std::string usage = UsageText("kv-indexer-server");
  for (const char* needle :
       {"KV_INDEXER_MAX_WORKER_ID_BYTES", "KV_INDEXER_MAX_WORKER_ADDRESS_BYTES",
        "KV_INDEXER_MAX_WORKER_EPOCH_BYTES", "KV_INDEXER_MAX_WORKERS",
        "KV_INDEXER_MAX_PREFIX_ANSWER_BYTES", "65536", "4000000", "2048"}) {
    EXPECT_THAT(usage, HasSubstr(needle));
  }
}

}  // namespace
}  // namespace kvindexer
