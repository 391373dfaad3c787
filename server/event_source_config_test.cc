// KV_INDEXER_EVENT_SOURCE, KV_INDEXER_FLEET_MAX_LAG_RECORDS and
// KV_INDEXER_FLEET_MAX_SILENCE_MS (replica/event_source_config.h), read
// through LoadServerConfig: defaults,
// the fleet log's variables read only with jetstream, every bad value
// naming its variable, and jetstream refused with a data directory.
#include "replica/event_source_config.h"

#include <chrono>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/server_config.h"

namespace kvindexer {
namespace event_source_config_test {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<ServerConfig> Load(std::map<std::string, std::string> vars) {
  return LoadServerConfig(MapEnvironment({vars.begin(), vars.end()}));
}

void ExpectError(std::map<std::string, std::string> vars,
                 const std::string& variable) {
  const absl::StatusOr<ServerConfig> config = Load(std::move(vars));
  ASSERT_FALSE(config.ok()) << "expected an error naming " << variable;
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr(variable));
}

TEST(EventSourceConfigTest, GrpcWithTenThousandRecordsByDefault) {
  const auto config = Load({});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->event_source.source, replica::EventSource::kGrpc);
  EXPECT_FALSE(config->event_source.follows_log());
  EXPECT_EQ(config->event_source.max_lag_records, 10000u);
  EXPECT_FALSE(config->event_source.log.has_value());
}

TEST(EventSourceConfigTest, GrpcIgnoresTheNatsVariables) {
  // A bad NATS URL does not matter while the log is not used.
  const auto config = Load({{"KV_INDEXER_EVENT_SOURCE", "grpc"},
                            {"KV_INDEXER_NATS_URL", "not a url"}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->event_source.log.has_value());
}

TEST(EventSourceConfigTest, JetStreamReadsTheLogVariables) {
  const auto config = Load({{"KV_INDEXER_EVENT_SOURCE", "jetstream"},
                            {"KV_INDEXER_NATS_URL", "nats://127.0.0.1:4222"},
                            {"KV_INDEXER_NATS_STREAM", "EVENTS_A"},
                            {"KV_INDEXER_FLEET_MAX_LAG_RECORDS", "250"}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->event_source.follows_log());
  EXPECT_EQ(config->event_source.max_lag_records, 250u);
  ASSERT_TRUE(config->event_source.log.has_value());
  EXPECT_THAT(config->event_source.log->nats.urls,
              ElementsAre("nats://127.0.0.1:4222"));
  EXPECT_EQ(config->event_source.log->stream, "EVENTS_A");
}

TEST(EventSourceConfigTest, BadEventSourcesNameTheVariable) {
  for (const char* bad :
       {"", "JETSTREAM", "nats", "grpc ", "kafka", "jetstream,grpc"}) {
    SCOPED_TRACE(bad);
    ExpectError({{"KV_INDEXER_EVENT_SOURCE", bad}}, "KV_INDEXER_EVENT_SOURCE");
  }
  const absl::Status s = replica::ParseEventSource("nats").status();
  EXPECT_THAT(s.message(), AllOf(HasSubstr("\"nats\""), HasSubstr("grpc"),
                                 HasSubstr("jetstream")));
}

TEST(EventSourceConfigTest, MaxLagIsAPositiveInteger) {
  EXPECT_EQ(replica::ParseFleetMaxLagRecords("1").value(), 1u);
  EXPECT_EQ(replica::ParseFleetMaxLagRecords("4294967295").value(),
            4294967295u);
  for (const char* bad :
       {"", "0", "-5", "+5", "1e4", " 100", "10k", "4294967296"}) {
    SCOPED_TRACE(bad);
    ExpectError({{"KV_INDEXER_FLEET_MAX_LAG_RECORDS", bad}},
                "KV_INDEXER_FLEET_MAX_LAG_RECORDS");
    // Checked in jetstream mode too.
    ExpectError({{"KV_INDEXER_EVENT_SOURCE", "jetstream"},
                 {"KV_INDEXER_NATS_URL", "nats://127.0.0.1:4222"},
                 {"KV_INDEXER_FLEET_MAX_LAG_RECORDS", bad}},
                "KV_INDEXER_FLEET_MAX_LAG_RECORDS");
  }
}

TEST(EventSourceConfigTest, MaxSilenceIsZeroOrHalfASecondToADay) {
  const auto config = Load({});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->event_source.max_silence, std::chrono::milliseconds(10000));
  const auto set = Load({{"KV_INDEXER_EVENT_SOURCE", "jetstream"},
                         {"KV_INDEXER_NATS_URL", "nats://127.0.0.1:4222"},
                         {"KV_INDEXER_FLEET_MAX_SILENCE_MS", "2500"}});
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->event_source.max_silence, std::chrono::milliseconds(2500));
  EXPECT_EQ(replica::ParseFleetMaxSilenceMs("0").value(),
            std::chrono::milliseconds(0));
  EXPECT_EQ(replica::ParseFleetMaxSilenceMs("500").value(),
            std::chrono::milliseconds(500));
  EXPECT_EQ(replica::ParseFleetMaxSilenceMs("86400000").value(),
            std::chrono::milliseconds(86400000));
  for (const char* bad : {"", "1", "499", "86400001", "-500", "+500", "10s",
                          " 500", "1e4", "4294967296"}) {
    SCOPED_TRACE(bad);
    ExpectError({{"KV_INDEXER_FLEET_MAX_SILENCE_MS", bad}},
                "KV_INDEXER_FLEET_MAX_SILENCE_MS");
    ExpectError({{"KV_INDEXER_EVENT_SOURCE", "jetstream"},
                 {"KV_INDEXER_NATS_URL", "nats://127.0.0.1:4222"},
                 {"KV_INDEXER_FLEET_MAX_SILENCE_MS", bad}},
                "KV_INDEXER_FLEET_MAX_SILENCE_MS");
  }
  // The value as given, and what is accepted.
  const absl::Status s = replica::ParseFleetMaxSilenceMs("0250").status();
  EXPECT_THAT(s.message(),
              AllOf(HasSubstr("\"0250\""), HasSubstr("500..86400000"),
                    HasSubstr("or 0 to keep serving")));
}

TEST(EventSourceConfigTest, LineAWritesAreOnUnlessTurnedOff) {
  const auto config = Load({});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->event_source.line_a_writes);
  const auto off = Load({{"KV_INDEXER_EVENT_SOURCE", "jetstream"},
                         {"KV_INDEXER_NATS_URL", "nats://127.0.0.1:4222"},
                         {"KV_INDEXER_FLEET_LINE_A_WRITES", "0"}});
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->event_source.line_a_writes);
  for (const char* bad : {"", "true", "yes", "2", " 1", "01"}) {
    SCOPED_TRACE(bad);
    ExpectError({{"KV_INDEXER_FLEET_LINE_A_WRITES", bad}},
                "KV_INDEXER_FLEET_LINE_A_WRITES");
  }
  EXPECT_THAT(replica::ParseFleetLineAWrites("on").status().message(),
              AllOf(HasSubstr("\"on\""), HasSubstr("1 (a replica writes")));
}

TEST(EventSourceConfigTest, OpenAttemptsDefaultToSixAndAreBounded) {
  const auto config = Load({});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->event_source.open_attempts, 6u);
  const auto one = Load({{"KV_INDEXER_FLEET_OPEN_ATTEMPTS", "1"}});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->event_source.open_attempts, 1u);
  for (const char* bad : {"", "0", "21", "-1", "six"}) {
    SCOPED_TRACE(bad);
    ExpectError({{"KV_INDEXER_FLEET_OPEN_ATTEMPTS", bad}},
                "KV_INDEXER_FLEET_OPEN_ATTEMPTS");
  }
  EXPECT_THAT(replica::ParseFleetOpenAttempts("30").status().message(),
              AllOf(HasSubstr("\"30\""), HasSubstr("1..20")));
}

TEST(EventSourceConfigTest, JetStreamNeedsAValidLogConfiguration) {
  ExpectError({{"KV_INDEXER_EVENT_SOURCE", "jetstream"}},
              "KV_INDEXER_NATS_URL");
  ExpectError({{"KV_INDEXER_EVENT_SOURCE", "jetstream"},
               {"KV_INDEXER_NATS_URL", "nats://127.0.0.1:4222"},
               {"KV_INDEXER_NATS_REPLICAS", "7"}},
              "KV_INDEXER_NATS_REPLICAS");
}

TEST(EventSourceConfigTest, JetStreamWithADataDirectoryIsRefused) {
  const auto config = Load({{"KV_INDEXER_EVENT_SOURCE", "jetstream"},
                            {"KV_INDEXER_NATS_URL", "nats://127.0.0.1:4222"},
                            {"KV_INDEXER_DATA_DIR", "/var/lib/kvindexer"}});
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(),
              AllOf(HasSubstr("KV_INDEXER_EVENT_SOURCE"),
                    HasSubstr("KV_INDEXER_DATA_DIR")));
  // An empty data directory is no data directory.
  EXPECT_TRUE(Load({{"KV_INDEXER_EVENT_SOURCE", "jetstream"},
                    {"KV_INDEXER_NATS_URL", "nats://127.0.0.1:4222"},
                    {"KV_INDEXER_DATA_DIR", ""}})
                  .ok());
  // grpc keeps the data directory.
  EXPECT_TRUE(Load({{"KV_INDEXER_EVENT_SOURCE", "grpc"},
                    {"KV_INDEXER_DATA_DIR", "/var/lib/kvindexer"}})
                  .ok());
}

TEST(EventSourceConfigTest, SnapshotVariablesAreReadAndChecked) {
  const auto config = Load({{"KV_INDEXER_FLEET_SNAPSHOT_INTERVAL_MS", "5000"},
                            {"KV_INDEXER_FLEET_SNAPSHOT_KEEP", "4"},
                            {"KV_INDEXER_FLEET_LEASE_TTL_MS", "3000"}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->event_source.snapshots.interval_ms, 5000u);
  EXPECT_EQ(config->event_source.snapshots.keep, 4u);
  EXPECT_EQ(config->event_source.snapshots.lease_ttl_ms, 3000u);
  ExpectError({{"KV_INDEXER_FLEET_SNAPSHOT_KEEP", "0"}},
              "KV_INDEXER_FLEET_SNAPSHOT_KEEP");
}

TEST(EventSourceConfigTest, UsageListsBothVariables) {
  const std::string usage = UsageText("kv-indexer-server");
  EXPECT_THAT(usage, AllOf(HasSubstr("KV_INDEXER_EVENT_SOURCE"),
                           HasSubstr("KV_INDEXER_FLEET_MAX_LAG_RECORDS"),
                           HasSubstr("KV_INDEXER_FLEET_MAX_SILENCE_MS"),
                           HasSubstr("KV_INDEXER_FLEET_SNAPSHOT_INTERVAL_MS"),
                           HasSubstr("KV_INDEXER_FLEET_SNAPSHOT_KEEP"),
                           HasSubstr("KV_INDEXER_FLEET_LEASE_TTL_MS")));
}

}  // namespace event_source_config_test
}  // namespace kvindexer
