// Hit counting and GetExternalKvHitCounts (docs/contract.md,
// "MatchExternalKv > Hit counting" and "GetExternalKvHitCounts"; behaviours 2
// and 20–22 of "Reference behaviours"). Saturation at UINT64_MAX is not
// tested: it would take 2^64 matches.
#include <map>

#include "conformance_fixture.h"

namespace kvindexer::conformance {
namespace {

class HitCountsTest : public ConformanceTest {};
KVINDEXER_INSTANTIATE_CONFORMANCE(HitCountsTest);

using Counts = std::map<int64_t, uint64_t>;

// Behaviour 20.
TEST_P(HitCountsTest, OnlyCountingMatchesCountAndOnlyMatchedHashes) {
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1}));
  Match({1, 2});
  EXPECT_EQ(Hits({1, 2}), Counts());
  Match({1, 2}, /*count_as_hit=*/true);
  EXPECT_EQ(Hits({1, 2}), Counts({{1, 1}}));
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1}));
  EXPECT_EQ(Hits({1, 2}), Counts({{1, 1}}));
}

// Behaviour 21.
TEST_P(HitCountsTest, FullRevokeDeletesTheCounter) {
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1}));
  Match({1}, true);
  EXPECT_EQ(Hits({1}), Counts({{1, 1}}));
  ApplyOk(Batch("w", "a").Revoke(kTierHbm, {1}));
  EXPECT_EQ(Match({1}).matches_size(), 0);
  EXPECT_EQ(Hits({1}), Counts());
  // Reported again, it starts from nothing.
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1}));
  EXPECT_EQ(Hits({1}), Counts());
  Match({1}, true);
  EXPECT_EQ(Hits({1}), Counts({{1, 1}}));
}

// Behaviour 22.
TEST_P(HitCountsTest, CounterSurvivesPartialRevoke) {
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1}).Report(kTierDram, {1}));
  Match({1}, true);
  ApplyOk(Batch("w", "a").Revoke(kTierHbm, {1}));
  EXPECT_EQ(Hits({1}), Counts({{1, 1}}));
  // Another worker's placement keeps it alive too.
  ApplyOk(Batch("v", "b").Report(kTierHbm, {1}));
  ApplyOk(Batch("w", "a").Revoke(kTierDram, {1}));
  EXPECT_EQ(Hits({1}), Counts({{1, 1}}));
  ApplyOk(Batch("v", "b").Clear(kTierHbm));
  EXPECT_EQ(Hits({1}), Counts());
}

TEST_P(HitCountsTest, ClearDeletesCountersOfBlocksItEmpties) {
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1, 2}).Report(kTierDram, {2}));
  Match({1, 2}, true);
  ApplyOk(Batch("w", "a").Clear(kTierHbm));
  EXPECT_EQ(Hits({1, 2}), Counts({{2, 1}}));
}

TEST_P(HitCountsTest, OncePerRequestNotPerWorkerOrRepeat) {
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1}).Report(kTierDram, {1}));
  ApplyOk(Batch("v", "b").Report(kTierHbm, {1}));
  Match({1, 1, 1}, true);
  EXPECT_EQ(Hits({1}), Counts({{1, 1}}));
  for (int i = 0; i < 5; ++i) Match({1, 7}, true);
  EXPECT_EQ(Hits({1, 7}), Counts({{1, 6}}));
}

TEST_P(HitCountsTest, EntriesInRequestOrderWithoutZeroes) {
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1, 2, 3}));
  Match({1, 2, 3}, true);
  Match({3}, true);
  v1::GetExternalKvHitCountsResponse resp;
  ASSERT_TRUE(indexer()
                  .operations()
                  .HitCounts(HitCountsRequest({3, 9, 1, 3, -4}), &resp)
                  .ok());
  ASSERT_EQ(resp.entries_size(), 2) << Text(resp);
  EXPECT_EQ(At(resp.entries(), 0).hash(), 3);
  EXPECT_EQ(At(resp.entries(), 0).hit_count_total(), 2u);
  EXPECT_EQ(At(resp.entries(), 1).hash(), 1);
  EXPECT_EQ(At(resp.entries(), 1).hit_count_total(), 1u);
}

TEST_P(HitCountsTest, AppliesNeverChangeCounters) {
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1}, {kComponentFull}, {16}));
  Match({1}, true);
  Match({1}, true);
  ApplyOk(Batch("w", "a")
              .Report(kTierHbm, {1}, {kComponentSwa}, {32})
              .Report(kTierSsd, {1})
              .Revoke(kTierSsd, {1}));
  ApplyOk(Batch("w", "zz"));
  EXPECT_EQ(Hits({1}), Counts({{1, 2}}));
}

}  // namespace
}  // namespace kvindexer::conformance
