// The bridge's /readyz decision (bridge/bridge_metrics.h): connected, and
// not cut off from the indexer by its last call (docs/metrics.md, "Paths").
#include <chrono>
#include <optional>
#include <string>

#include "bridge/bridge_metrics.h"
#include "bridge/bridge_stats.h"
#include "bridge/live_buffer.h"
#include "common/metrics_registry.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace bridge_readiness_test {

TEST(BridgeReadinessTest, FollowsConnectionAndTheLastCallToTheIndexer) {
  MetricsRegistry registry;
  LiveBuffer buffer(4);
  BridgeMetrics metrics(registry, buffer);
  BridgeStats stats;
  const auto now = std::chrono::steady_clock::now();

  EXPECT_EQ(metrics.NotReadyReason(),
            std::optional<std::string>("not connected to the indexer"));
  metrics.SetConnected(true);
  metrics.Publish(stats, now, /*force=*/true);
  EXPECT_EQ(metrics.NotReadyReason(), std::nullopt);

  // A refused token is not "unreachable": readiness stays (the bridge exits).
  stats.CountRpcFailure(16);  // UNAUTHENTICATED
  metrics.Publish(stats, now, /*force=*/true);
  EXPECT_EQ(metrics.NotReadyReason(), std::nullopt);

  stats.CountRpcFailure(14);  // UNAVAILABLE
  metrics.Publish(stats, now, /*force=*/true);
  ASSERT_TRUE(metrics.NotReadyReason().has_value());
  EXPECT_NE(metrics.NotReadyReason()->find("unreachable"), std::string::npos);

  stats.NoteIndexerReached();
  metrics.Publish(stats, now, /*force=*/true);
  EXPECT_EQ(metrics.NotReadyReason(), std::nullopt);

  stats.CountRpcFailure(4);  // DEADLINE_EXCEEDED
  metrics.Publish(stats, now, /*force=*/true);
  EXPECT_TRUE(metrics.NotReadyReason().has_value());

  metrics.SetConnected(false);
  EXPECT_EQ(metrics.NotReadyReason(),
            std::optional<std::string>("not connected to the indexer"));
}

}  // namespace bridge_readiness_test
}  // namespace kvindexer::bridge
