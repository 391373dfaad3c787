// The staged-snapshot limits (server/staging_config.h): defaults, every
// variable read, the ends of each range, and every bad value refused with
// a message naming the variable.
#include "server/staging_config.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/server_config.h"

namespace kvindexer::staging_config_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using Vars = std::map<std::string, std::string, std::less<>>;

TEST(StagingConfigTest, Defaults) {
  auto limits = LoadStagingLimits(MapEnvironment({}));
  ASSERT_TRUE(limits.ok()) << limits.status();
  EXPECT_EQ(limits->max_placements, 20'000'000u);
  EXPECT_EQ(limits->max_transactions, 256u);
  EXPECT_EQ(limits->idle_timeout_ms, 60'000u);
  // The server's configuration carries them.
  auto config = LoadServerConfig(MapEnvironment({}));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->staging.max_placements, 20'000'000u);
  EXPECT_EQ(config->staging.max_transactions, 256u);
  EXPECT_EQ(config->staging.idle_timeout_ms, 60'000u);
}

TEST(StagingConfigTest, ReadsEveryVariableAtTheEndsOfItsRange) {
  auto low = LoadServerConfig(
      MapEnvironment(Vars{{"KV_INDEXER_STAGING_MAX_PLACEMENTS", "1"},
                          {"KV_INDEXER_STAGING_MAX_TRANSACTIONS", "1"},
                          {"KV_INDEXER_STAGING_IDLE_TIMEOUT_MS", "1000"}}));
  ASSERT_TRUE(low.ok()) << low.status();
  EXPECT_EQ(low->staging.max_placements, 1u);
  EXPECT_EQ(low->staging.max_transactions, 1u);
  EXPECT_EQ(low->staging.idle_timeout_ms, 1000u);
  auto high = LoadStagingLimits(
      MapEnvironment(Vars{{"KV_INDEXER_STAGING_MAX_PLACEMENTS", " 50000000 "},
                          {"KV_INDEXER_STAGING_MAX_TRANSACTIONS", "4294967295"},
                          {"KV_INDEXER_STAGING_IDLE_TIMEOUT_MS", "3600000"}}));
  ASSERT_TRUE(high.ok()) << high.status();
  EXPECT_EQ(high->max_placements, 50'000'000u);
  EXPECT_EQ(high->max_transactions, 4'294'967'295u);
  EXPECT_EQ(high->idle_timeout_ms, 3'600'000u);
  // Blank keeps the default.
  auto blank = LoadStagingLimits(
      MapEnvironment(Vars{{"KV_INDEXER_STAGING_IDLE_TIMEOUT_MS", "  "}}));
  ASSERT_TRUE(blank.ok());
  EXPECT_EQ(blank->idle_timeout_ms, 60'000u);
}

TEST(StagingConfigTest, BadValuesNameTheVariable) {
  const struct {
    const char* var;
    const char* value;
    const char* accepted;
  } cases[] = {
      {"KV_INDEXER_STAGING_MAX_PLACEMENTS", "0", "1..50000000"},
      {"KV_INDEXER_STAGING_MAX_PLACEMENTS", "50000001", "1..50000000"},
      {"KV_INDEXER_STAGING_MAX_PLACEMENTS", "20M", "1..50000000"},
      {"KV_INDEXER_STAGING_MAX_TRANSACTIONS", "0", "1..4294967295"},
      {"KV_INDEXER_STAGING_MAX_TRANSACTIONS", "-1", "1..4294967295"},
      {"KV_INDEXER_STAGING_MAX_TRANSACTIONS", "4294967296", "1..4294967295"},
      {"KV_INDEXER_STAGING_IDLE_TIMEOUT_MS", "999", "1000..3600000"},
      {"KV_INDEXER_STAGING_IDLE_TIMEOUT_MS", "3600001", "1000..3600000"},
      {"KV_INDEXER_STAGING_IDLE_TIMEOUT_MS", "1m", "1000..3600000"},
  };
  for (const auto& c : cases) {
    auto config = LoadServerConfig(MapEnvironment(Vars{{c.var, c.value}}));
    ASSERT_FALSE(config.ok()) << c.var << "=" << c.value;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(config.status().message(),
                AllOf(HasSubstr(std::string(c.var) + "=\"" + c.value + "\""),
                      HasSubstr(c.accepted)));
  }
}

}  // namespace
}  // namespace kvindexer::staging_config_test
