// KV_INDEXER_DATA_DIR, KV_INDEXER_WAL_SYNC, KV_INDEXER_CHECKPOINT_BYTES,
// KV_INDEXER_CHECKPOINT_BUILDER, KV_INDEXER_CHECKPOINT_TIMEOUT_MS and
// KV_INDEXER_MAX_REPLAY_BYTES (server/durability_config.h).
#include "server/durability_config.h"

#include <chrono>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/server_config.h"

namespace kvindexer {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

absl::StatusOr<ServerConfig> Load(std::map<std::string, std::string> vars) {
  return LoadServerConfig(MapEnvironment({vars.begin(), vars.end()}));
}

TEST(DurabilityConfigTest, OffWithAlwaysAnd64MiBByDefault) {
  auto config = Load({});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->durability.enabled());
  EXPECT_EQ(config->durability.wal_sync, durable::WalSync::kAlways);
  EXPECT_EQ(config->durability.checkpoint_bytes, 67108864u);
  EXPECT_EQ(config->durability.checkpoint_builder, CheckpointBuilder::kProcess);
  EXPECT_EQ(config->durability.checkpoint_timeout,
            std::chrono::milliseconds(600000));
  EXPECT_EQ(config->durability.max_replay_bytes, 2 * 67108864u);
}

TEST(DurabilityConfigTest, TheReplayBoundIsZeroOrTwiceTheCheckpointSize) {
  // The default follows the checkpoint size.
  auto config = Load({{"KV_INDEXER_CHECKPOINT_BYTES", "1048576"}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->durability.max_replay_bytes, 2097152u);
  config = Load({{"KV_INDEXER_CHECKPOINT_BYTES", "1048576"},
                 {"KV_INDEXER_MAX_REPLAY_BYTES", "0"}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->durability.max_replay_bytes, 0u);
  config = Load({{"KV_INDEXER_MAX_REPLAY_BYTES", "536870912"}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->durability.max_replay_bytes, 536870912u);

  EXPECT_EQ(ParseMaxReplayBytes("2097152", 1048576).value(), 2097152u);
  for (const char* bad :
       {"", "2097151", "-1", "2M", " 0", "1e9", "18446744073709551616"}) {
    EXPECT_FALSE(ParseMaxReplayBytes(bad, 1048576).ok()) << bad;
  }
  // Checked against the checkpoint size of the same configuration.
  auto small = Load({{"KV_INDEXER_CHECKPOINT_BYTES", "67108864"},
                     {"KV_INDEXER_MAX_REPLAY_BYTES", "100000000"}});
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(small.status().message()),
              AllOf(HasSubstr("KV_INDEXER_MAX_REPLAY_BYTES"),
                    HasSubstr("\"100000000\""), HasSubstr("134217728")));
}

TEST(DurabilityConfigTest, ReadsAllFiveVariables) {
  auto config = Load({{"KV_INDEXER_DATA_DIR", "/var/lib/kvindexer"},
                      {"KV_INDEXER_WAL_SYNC", "none"},
                      {"KV_INDEXER_CHECKPOINT_BYTES", "1048576"},
                      {"KV_INDEXER_CHECKPOINT_BUILDER", "thread"},
                      {"KV_INDEXER_CHECKPOINT_TIMEOUT_MS", "30000"}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->durability.enabled());
  EXPECT_EQ(config->durability.data_dir, "/var/lib/kvindexer");
  EXPECT_EQ(config->durability.wal_sync, durable::WalSync::kNone);
  EXPECT_EQ(config->durability.checkpoint_bytes, 1048576u);
  EXPECT_EQ(config->durability.checkpoint_builder, CheckpointBuilder::kThread);
  EXPECT_EQ(config->durability.checkpoint_timeout,
            std::chrono::milliseconds(30000));
}

TEST(DurabilityConfigTest, EmptyDataDirMeansInMemory) {
  auto config = Load({{"KV_INDEXER_DATA_DIR", ""}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->durability.enabled());
}

TEST(DurabilityConfigTest, WalSyncIsAlwaysOrNone) {
  EXPECT_EQ(ParseWalSync("always").value(), durable::WalSync::kAlways);
  EXPECT_EQ(ParseWalSync("none").value(), durable::WalSync::kNone);
  for (const char* bad : {"", "ALWAYS", "never", "fsync", "1", " none"}) {
    EXPECT_FALSE(ParseWalSync(bad).ok()) << bad;
  }
}

TEST(DurabilityConfigTest, CheckpointBytesIsAnIntegerOfAtLeastOneMiB) {
  EXPECT_EQ(ParseCheckpointBytes("1048576").value(), 1048576u);
  EXPECT_EQ(ParseCheckpointBytes("18446744073709551615").value(),
            18446744073709551615u);
  for (const char* bad : {"", "0", "1048575", "-1048576", "+1048576", "64M",
                          "1e9", " 1048576", "18446744073709551616"}) {
    EXPECT_FALSE(ParseCheckpointBytes(bad).ok()) << bad;
  }
}

TEST(DurabilityConfigTest, CheckpointBuilderIsProcessOrThread) {
  EXPECT_EQ(ParseCheckpointBuilder("process").value(),
            CheckpointBuilder::kProcess);
  EXPECT_EQ(ParseCheckpointBuilder("thread").value(),
            CheckpointBuilder::kThread);
  for (const char* bad : {"", "Process", "fork", "threads", " thread"}) {
    EXPECT_FALSE(ParseCheckpointBuilder(bad).ok()) << bad;
  }
}

TEST(DurabilityConfigTest, CheckpointTimeoutIsOneSecondToOneDay) {
  EXPECT_EQ(ParseCheckpointTimeoutMs("1000").value(),
            std::chrono::milliseconds(1000));
  EXPECT_EQ(ParseCheckpointTimeoutMs("86400000").value(),
            std::chrono::milliseconds(86400000));
  for (const char* bad : {"", "0", "999", "86400001", "-1000", "10m", "1e6",
                          " 60000", "4294967296"}) {
    EXPECT_FALSE(ParseCheckpointTimeoutMs(bad).ok()) << bad;
  }
}

// The tuning variables are checked even when no data directory is set.
TEST(DurabilityConfigTest, BadTuningIsAnErrorWithoutADataDirectory) {
  auto bad_sync = Load({{"KV_INDEXER_WAL_SYNC", "sometimes"}});
  ASSERT_FALSE(bad_sync.ok());
  EXPECT_EQ(bad_sync.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad_sync.status().message()),
              AllOf(HasSubstr("KV_INDEXER_WAL_SYNC"),
                    HasSubstr("\"sometimes\""), HasSubstr("always")));
  auto bad_bytes = Load({{"KV_INDEXER_CHECKPOINT_BYTES", "4096"}});
  ASSERT_FALSE(bad_bytes.ok());
  EXPECT_THAT(std::string(bad_bytes.status().message()),
              AllOf(HasSubstr("KV_INDEXER_CHECKPOINT_BYTES"),
                    HasSubstr("\"4096\""), HasSubstr("1048576")));
  auto bad_builder = Load({{"KV_INDEXER_CHECKPOINT_BUILDER", "fork"}});
  ASSERT_FALSE(bad_builder.ok());
  EXPECT_THAT(
      std::string(bad_builder.status().message()),
      AllOf(HasSubstr("KV_INDEXER_CHECKPOINT_BUILDER"), HasSubstr("\"fork\""),
            HasSubstr("process"), HasSubstr("thread")));
  auto bad_timeout = Load({{"KV_INDEXER_CHECKPOINT_TIMEOUT_MS", "500"}});
  ASSERT_FALSE(bad_timeout.ok());
  EXPECT_EQ(bad_timeout.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(bad_timeout.status().message()),
      AllOf(HasSubstr("KV_INDEXER_CHECKPOINT_TIMEOUT_MS"), HasSubstr("\"500\""),
            HasSubstr("1000"), HasSubstr("86400000")));
}

TEST(DurabilityConfigTest, UsageListsTheVariables) {
  const std::string usage = UsageText("kv-indexer-server");
  EXPECT_THAT(usage, AllOf(HasSubstr("KV_INDEXER_DATA_DIR"),
                           HasSubstr("KV_INDEXER_WAL_SYNC"),
                           HasSubstr("KV_INDEXER_CHECKPOINT_BYTES"),
                           HasSubstr("KV_INDEXER_CHECKPOINT_BUILDER"),
                           HasSubstr("KV_INDEXER_CHECKPOINT_TIMEOUT_MS"),
                           HasSubstr("KV_INDEXER_MAX_REPLAY_BYTES")));
}

}  // namespace
}  // namespace kvindexer
