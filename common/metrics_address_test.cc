#include "common/metrics_address.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer {
namespace {

using ::testing::HasSubstr;

TEST(MetricsAddressTest, ParsesIpv4Ipv6AndLocalhost) {
  auto v4 = ParseMetricsAddress("VAR", "127.0.0.1:9464");
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 9464);
  EXPECT_EQ(v4->ToString(), "127.0.0.1:9464");

  auto v6 = ParseMetricsAddress("VAR", "[::1]:0");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 0);
  EXPECT_EQ(v6->ToString(), "[::1]:0");

  auto local = ParseMetricsAddress("VAR", "localhost:65535");
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(local->port, 65535);
}

TEST(MetricsAddressTest, RejectionsNameTheVariableAndValue) {
  for (const char* bad : {"", "9464", "127.0.0.1", "127.0.0.1:",
                          "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:12x",
                          "example.com:80", "[::1:80", "[zz]:80", "::1:80"}) {
    auto parsed = ParseMetricsAddress("KV_INDEXER_METRICS_ADDR", bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_THAT(
        parsed.status().message(),
        HasSubstr(std::string("KV_INDEXER_METRICS_ADDR=\"") + bad + "\""));
  }
}

}  // namespace
}  // namespace kvindexer
