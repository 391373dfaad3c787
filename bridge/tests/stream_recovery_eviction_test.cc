// The recovery engine when the indexer's placement bound evicts the
// stream's placements (docs/bridge-events.md, "When the indexer evicts"):
// with a snapshot endpoint it installs a whole snapshot, at most once per
// interval; without one it only counts and warns.
#include <chrono>

#include "bridge/stream_recovery.h"
#include "bridge/tests/recovery_test_fixture.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge::testing {
// Named: the unity build compiles this file with the other engine tests.
namespace eviction_test {

using std::chrono::milliseconds;
using Op = PublisherOp;

constexpr milliseconds kSecond(1000);

RecoveryOptions ResyncEvery(milliseconds interval) {
  RecoveryOptions options;
  options.eviction_resync_interval = interval;
  return options;
}

TEST(StreamRecoveryEviction, ASnapshotEndpointMakesTheStreamExactAgain) {
  RecoveryRig rig({.snapshot = true}, ResyncEvery(60 * kSecond));
  rig.publisher.Publish({Op::Store({1, 2})});
  ASSERT_TRUE(rig.RunFor(2 * kSecond).ok());
  ASSERT_TRUE(rig.engine->exact());
  const size_t replaces = rig.server.replaces.size();

  rig.server.evicted = true;
  rig.publisher.Publish({Op::Store({3})});
  ASSERT_TRUE(rig.RunFor(5 * kSecond).ok());
  EXPECT_GE(rig.stats.evictions_reported, 1u);
  EXPECT_EQ(rig.stats.eviction_resyncs, 1u);
  EXPECT_EQ(rig.server.replaces.size(), replaces + 1);
  EXPECT_FALSE(rig.server.evicted);
  EXPECT_TRUE(rig.engine->exact());
  EXPECT_EQ(rig.server.Held(kWorker), rig.publisher.cached_hashes());
}

TEST(StreamRecoveryEviction, AnInstallThatIsEvictedAgainWaitsForTheInterval) {
  RecoveryRig rig({.snapshot = true}, ResyncEvery(60 * kSecond));
  rig.publisher.Publish({Op::Store({1, 2})});
  ASSERT_TRUE(rig.RunFor(2 * kSecond).ok());
  rig.server.evicted = true;
  rig.server.evict_on_install = true;
  // Probes every second keep saying so; one resync in the interval.
  ASSERT_TRUE(rig.RunFor(30 * kSecond).ok());
  EXPECT_EQ(rig.stats.eviction_resyncs, 1u);
  EXPECT_GE(rig.stats.evictions_reported, 10u);
  // Its install came back evicted: the next waits twice the interval.
  ASSERT_TRUE(rig.RunFor(60 * kSecond).ok());
  EXPECT_EQ(rig.stats.eviction_resyncs, 1u);
  ASSERT_TRUE(rig.RunFor(40 * kSecond).ok());
  EXPECT_EQ(rig.stats.eviction_resyncs, 2u);
  // ... and the one after four times.
  ASSERT_TRUE(rig.RunFor(200 * kSecond).ok());
  EXPECT_EQ(rig.stats.eviction_resyncs, 2u);
  ASSERT_TRUE(rig.RunFor(60 * kSecond).ok());
  EXPECT_EQ(rig.stats.eviction_resyncs, 3u);
  EXPECT_TRUE(rig.engine->synchronised());
  // An install that lands whole brings the interval back.
  rig.server.evict_on_install = false;
  ASSERT_TRUE(rig.RunFor(500 * kSecond).ok());
  EXPECT_EQ(rig.stats.eviction_resyncs, 4u);
  EXPECT_FALSE(rig.server.evicted);
  rig.server.evicted = true;
  ASSERT_TRUE(rig.RunFor(65 * kSecond).ok());
  EXPECT_EQ(rig.stats.eviction_resyncs, 5u);
}

TEST(StreamRecoveryEviction, WithoutSnapshotsTheBridgeOnlyCounts) {
  RecoveryRig rig({.replay = true}, ResyncEvery(kSecond));
  rig.publisher.Publish({Op::Store({1, 2})});
  ASSERT_TRUE(rig.RunFor(2 * kSecond).ok());
  const size_t replaces = rig.server.replaces.size();
  rig.server.evicted = true;
  rig.publisher.Publish({Op::Store({3})});
  ASSERT_TRUE(rig.RunFor(5 * kSecond).ok());
  EXPECT_GE(rig.stats.evictions_reported, 1u);
  EXPECT_EQ(rig.stats.eviction_resyncs, 0u);
  EXPECT_EQ(rig.server.replaces.size(), replaces);
  EXPECT_TRUE(rig.engine->synchronised());
}

}  // namespace eviction_test
}  // namespace kvindexer::bridge::testing
