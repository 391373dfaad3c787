// IndexBackend::GetStats: the counters follow the index (backend.h,
// BackendStats), and the struct_size rule holds.
#include <cstddef>

#include "conformance_fixture.h"

namespace kvindexer::conformance {
namespace {

class StatsTest : public ConformanceTest {
 protected:
  BackendStats Stats() {
    BackendStats stats{};
    stats.struct_size = sizeof(BackendStats);
    backend()->GetStats(&stats);
    return stats;
  }
};
KVINDEXER_INSTANTIATE_CONFORMANCE(StatsTest);

TEST_P(StatsTest, FreshBackendIsEmpty) {
  const BackendStats s = Stats();
  EXPECT_EQ(s.blocks, 0u);
  EXPECT_EQ(s.placements, 0u);
  EXPECT_EQ(s.workers, 0u);
  EXPECT_EQ(s.hit_counters, 0u);
}

TEST_P(StatsTest, CountersFollowTheIndex) {
  ApplyOk(Batch("w1", "a").Report(kTierHbm, {1, 2, 3}).Report(kTierDram, {1}));
  ApplyOk(Batch("w2", "b").Report(kTierHbm, {3}));
  ApplyOk(Batch("w3", "c"));  // a worker without placements
  BackendStats s = Stats();
  EXPECT_EQ(s.blocks, 3u);
  EXPECT_EQ(s.placements, 5u);
  EXPECT_EQ(s.workers, 3u);
  EXPECT_EQ(s.hit_counters, 0u);

  Match({1, 2, 9}, /*count_as_hit=*/true);
  EXPECT_EQ(Stats().hit_counters, 2u);

  ApplyOk(Batch("w1", "a").Revoke(kTierHbm, {2, 1}));
  s = Stats();
  EXPECT_EQ(s.blocks, 2u);
  EXPECT_EQ(s.placements, 3u);
  EXPECT_EQ(s.hit_counters, 1u);  // 1 survives at DRAM, 2 is gone

  ApplyOk(Batch("w1", "a").Clear(kTierHbm).Clear(kTierDram));
  ApplyOk(Batch("w2", "b").Clear(kTierHbm));
  s = Stats();
  EXPECT_EQ(s.blocks, 0u);
  EXPECT_EQ(s.placements, 0u);
  EXPECT_EQ(s.hit_counters, 0u);
  EXPECT_EQ(s.workers, 3u);  // CLEAR never deletes a worker record
}

TEST_P(StatsTest, RejectedAndReadOnlyCallsChangeNothing) {
  ApplyOk(Batch("w1", "a").Report(kTierHbm, {1, 2}));
  const BackendStats before = Stats();
  EXPECT_FALSE(
      Apply(Batch("w2", "b").Report(kTierHbm, {3}).Report(0, {4})).ok());
  Match({1, 2, 3});
  Prefix({1, 2, 3});
  Hits({1, 2});
  const BackendStats after = Stats();
  EXPECT_EQ(after.blocks, before.blocks);
  EXPECT_EQ(after.placements, before.placements);
  EXPECT_EQ(after.workers, before.workers);
  EXPECT_EQ(after.hit_counters, before.hit_counters);
}

TEST_P(StatsTest, MemoryAccountingGrowsWithTheIndex) {
  const uint64_t empty = Stats().memory_bytes;
  ApplyOk(Batch("w1", "a").Report(kTierHbm, Range(0, 10000)));
  const uint64_t full = Stats().memory_bytes;
  EXPECT_GT(full, empty);
  // At least a few bytes per placement; a loose sanity bound.
  EXPECT_GE(full - empty, 10000u * 8);
}

TEST_P(StatsTest, FieldsPastStructSizeAreLeftAlone) {
  ApplyOk(Batch("w1", "a").Report(kTierHbm, {1, 2}));
  constexpr uint64_t kSentinel = 0xDEADBEEFCAFEF00Dull;
  BackendStats stats{};
  stats.struct_size = offsetof(BackendStats, workers);
  stats.workers = kSentinel;
  stats.hit_counters = kSentinel;
  stats.memory_bytes = kSentinel;
  backend()->GetStats(&stats);
  EXPECT_EQ(stats.blocks, 2u);
  EXPECT_EQ(stats.placements, 2u);
  EXPECT_EQ(stats.workers, kSentinel);
  EXPECT_EQ(stats.hit_counters, kSentinel);
  EXPECT_EQ(stats.memory_bytes, kSentinel);
}

}  // namespace
}  // namespace kvindexer::conformance
