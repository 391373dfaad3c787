// KV_INDEXER_LIVENESS and KV_INDEXER_LIVENESS_SWEEP_MS (server/server_config.h,
// the worker liveness block).
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/server_config.h"

namespace kvindexer {
namespace liveness_config_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

absl::StatusOr<ServerConfig> Load(std::map<std::string, std::string> vars) {
  return LoadServerConfig(MapEnvironment({vars.begin(), vars.end()}));
}

TEST(LivenessConfigTest, OnWithOneSecondSweepsByDefault) {
  auto config = Load({});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->liveness);
  EXPECT_EQ(config->liveness_sweep_ms, 1000u);
}

TEST(LivenessConfigTest, ReadsBothVariables) {
  auto config = Load(
      {{"KV_INDEXER_LIVENESS", "no"}, {"KV_INDEXER_LIVENESS_SWEEP_MS", "250"}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->liveness);
  EXPECT_EQ(config->liveness_sweep_ms, 250u);
}

TEST(LivenessConfigTest, LivenessAcceptsThreeSpellingsEachWay) {
  for (const char* on : {"1", "true", "yes", "TRUE", "Yes"}) {
    EXPECT_EQ(ParseLiveness(on).value(), true) << on;
  }
  for (const char* off : {"0", "false", "no", "False", "NO"}) {
    EXPECT_EQ(ParseLiveness(off).value(), false) << off;
  }
  for (const char* bad : {"", "on", "off", "2", " 1", "1 ", "y", "n", "-1"}) {
    EXPECT_FALSE(ParseLiveness(bad).ok()) << bad;
  }
}

TEST(LivenessConfigTest, SweepPeriodIsAPositiveInteger) {
  EXPECT_EQ(ParseLivenessSweepMs("1").value(), 1u);
  EXPECT_EQ(ParseLivenessSweepMs("4294967295").value(), 4294967295u);
  for (const char* bad :
       {"0", "", "-5", "+5", "1s", "1.5", " 10", "4294967296", "0x10"}) {
    EXPECT_FALSE(ParseLivenessSweepMs(bad).ok()) << bad;
  }
}

TEST(LivenessConfigTest, ErrorsNameVariableValueAndAccepted) {
  auto bad_switch = Load({{"KV_INDEXER_LIVENESS", "maybe"}});
  ASSERT_FALSE(bad_switch.ok());
  EXPECT_EQ(bad_switch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad_switch.status().message()),
              AllOf(HasSubstr("KV_INDEXER_LIVENESS="), HasSubstr("\"maybe\""),
                    HasSubstr("1, true or yes")));
  auto bad_period = Load({{"KV_INDEXER_LIVENESS_SWEEP_MS", "0"}});
  ASSERT_FALSE(bad_period.ok());
  EXPECT_THAT(std::string(bad_period.status().message()),
              AllOf(HasSubstr("KV_INDEXER_LIVENESS_SWEEP_MS"),
                    HasSubstr("\"0\""), HasSubstr("positive integer")));
}

TEST(LivenessConfigTest, UsageListsBothVariables) {
  const std::string usage = UsageText("kv-indexer-server");
  EXPECT_THAT(usage, HasSubstr("KV_INDEXER_LIVENESS "));
  EXPECT_THAT(usage, HasSubstr("KV_INDEXER_LIVENESS_SWEEP_MS"));
}

}  // namespace
}  // namespace liveness_config_test
}  // namespace kvindexer
