#include "server/metrics_config.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/server_config.h"

namespace kvindexer {
namespace {

using ::testing::HasSubstr;

TEST(MetricsConfigTest, UnsetOrBlankIsOff) {
  auto off = LoadMetricsAddr(MapEnvironment({}));
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->has_value());
  auto blank =
      LoadMetricsAddr(MapEnvironment({{"KV_INDEXER_METRICS_ADDR", " "}}));
  ASSERT_TRUE(blank.ok());
  EXPECT_FALSE(blank->has_value());
}

TEST(MetricsConfigTest, ServerConfigCarriesTheAddress) {
  auto config = LoadServerConfig(
      MapEnvironment({{"KV_INDEXER_METRICS_ADDR", "127.0.0.1:0"}}));
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(config->metrics_addr.has_value());
  EXPECT_EQ(config->metrics_addr->host, "127.0.0.1");
  EXPECT_EQ(config->metrics_addr->port, 0);
}

TEST(MetricsConfigTest, BadValueNamesTheVariable) {
  auto config = LoadServerConfig(
      MapEnvironment({{"KV_INDEXER_METRICS_ADDR", "metrics.example:99999"}}));
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(),
              HasSubstr("KV_INDEXER_METRICS_ADDR=\"metrics.example:99999\""));
}

}  // namespace
}  // namespace kvindexer
