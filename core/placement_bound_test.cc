// PlanEvictions and PlacementTally (core/placement_bound.h): which tiers of
// which workers a plan clears, in which order, for the per-worker bound, the
// index bound and its fair share.
#include "core/placement_bound.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kvindexer {
namespace {

TierCounts Counts(uint64_t hbm, uint64_t dram, uint64_t ssd) {
  return TierCounts{0, hbm, dram, ssd};
}

PlannedEviction Evict(std::string id, uint32_t tier, uint64_t n,
                      EvictionReason reason) {
  return PlannedEviction{std::move(id), tier, n, reason};
}

TEST(PlacementTallyTest, KeepsTheSumAndForgetsEmptyWorkers) {
  PlacementTally tally;
  tally.Set("a", Counts(3, 2, 1));
  tally.Set("b", Counts(10, 0, 0));
  EXPECT_EQ(tally.total(), 16u);
  EXPECT_EQ(tally.holders(), 2u);
  tally.Set("a", Counts(1, 0, 0));
  EXPECT_EQ(tally.total(), 11u);
  tally.Set("b", Counts(0, 0, 0));
  EXPECT_EQ(tally.holders(), 1u);
  EXPECT_EQ(tally.Get("b"), Counts(0, 0, 0));
  tally.Erase("a");
  tally.Erase("missing");
  EXPECT_EQ(tally.total(), 0u);
  EXPECT_EQ(tally.holders(), 0u);
}

TEST(PlanEvictionsTest, NothingWhileWithinTheBounds) {
  PlacementTally tally;
  tally.Set("a", Counts(5, 5, 0));
  EXPECT_TRUE(PlanEvictions(tally, {"a"}, PlacementBound{}).empty());
  EXPECT_TRUE(
      PlanEvictions(tally, {"a"},
                    PlacementBound{.max_placements = 10, .max_per_worker = 10})
          .empty());
}

TEST(PlanEvictionsTest, AWorkerOverItsBoundLosesItsLeastValuableTiersFirst) {
  PlacementTally tally;
  tally.Set("a", Counts(4, 3, 2));  // 9
  // Down to 5: SSD (2) leaves 7, DRAM (3) leaves 4; HBM stays.
  EXPECT_EQ(PlanEvictions(tally, {"a"}, PlacementBound{.max_per_worker = 5}),
            (std::vector<PlannedEviction>{
                Evict("a", kTierSsd, 2, EvictionReason::kWorkerBound),
                Evict("a", kTierDram, 3, EvictionReason::kWorkerBound)}));
  // Down to 3: every tier goes, HBM last.
  EXPECT_EQ(PlanEvictions(tally, {"a"}, PlacementBound{.max_per_worker = 3}),
            (std::vector<PlannedEviction>{
                Evict("a", kTierSsd, 2, EvictionReason::kWorkerBound),
                Evict("a", kTierDram, 3, EvictionReason::kWorkerBound),
                Evict("a", kTierHbm, 4, EvictionReason::kWorkerBound)}));
}

TEST(PlanEvictionsTest, OnlyChangedWorkersAreCheckedAgainstTheirOwnBound) {
  PlacementTally tally;
  tally.Set("a", Counts(9, 0, 0));
  tally.Set("b", Counts(1, 0, 0));
  // "a" is over, but this mutation changed "b" only: a bound lowered at a
  // restart applies to a worker at its next change.
  EXPECT_TRUE(
      PlanEvictions(tally, {"b"}, PlacementBound{.max_per_worker = 5}).empty());
}

TEST(PlanEvictionsTest, TheIndexBoundNeverTakesFromAWorkerWithinItsShare) {
  PlacementTally tally;
  tally.Set("big", Counts(50, 30, 0));  // 80
  tally.Set("small", Counts(10, 0, 0));
  tally.Set("mid", Counts(20, 0, 0));
  // 110 over a bound of 90: share 30. Only "big" is over its share; it
  // loses DRAM (30), which brings the index to 80.
  EXPECT_EQ(
      PlanEvictions(tally, {"small"}, PlacementBound{.max_placements = 90}),
      (std::vector<PlannedEviction>{
          Evict("big", kTierDram, 30, EvictionReason::kIndexBound)}));
}

TEST(PlanEvictionsTest, TheLargestGoFirstAndEqualOnesByName) {
  PlacementTally tally;
  tally.Set("b", Counts(40, 0, 0));
  tally.Set("a", Counts(40, 0, 0));
  tally.Set("c", Counts(5, 0, 0));
  // 85 over 60: share 20; "a" (first by name among the largest) goes whole,
  // which is enough.
  EXPECT_EQ(PlanEvictions(tally, {"c"}, PlacementBound{.max_placements = 60}),
            (std::vector<PlannedEviction>{
                Evict("a", kTierHbm, 40, EvictionReason::kIndexBound)}));
  // 85 over 10: share 3; both large ones go, and then the index is within
  // the bound, so the small one keeps its placements.
  EXPECT_EQ(PlanEvictions(tally, {"c"}, PlacementBound{.max_placements = 10}),
            (std::vector<PlannedEviction>{
                Evict("a", kTierHbm, 40, EvictionReason::kIndexBound),
                Evict("b", kTierHbm, 40, EvictionReason::kIndexBound)}));
}

TEST(PlanEvictionsTest, TheWorkerBoundComesFirstAndCountsForTheIndex) {
  PlacementTally tally;
  tally.Set("a", Counts(10, 0, 10));
  tally.Set("b", Counts(30, 0, 0));
  // "a" loses SSD to its own bound (15); the index is then at 40, within
  // 45, so nothing else goes.
  EXPECT_EQ(
      PlanEvictions(tally, {"a"},
                    PlacementBound{.max_placements = 45, .max_per_worker = 15}),
      (std::vector<PlannedEviction>{
          Evict("a", kTierSsd, 10, EvictionReason::kWorkerBound)}));
}

TEST(PlanEvictionsTest, ThePlanDoesNotDependOnTheOrderWorkersWereCounted) {
  std::vector<std::string> ids;
  for (int i = 0; i < 200; ++i) ids.push_back("w" + std::to_string(i));
  PlacementTally forward;
  PlacementTally backward;
  for (size_t i = 0; i < ids.size(); ++i) {
    forward.Set(ids[i], Counts(100 + i % 7, i % 3, i % 5));
  }
  for (size_t i = ids.size(); i-- > 0;) {
    backward.Set(ids[i], Counts(100 + i % 7, i % 3, i % 5));
  }
  const PlacementBound bound{.max_placements = 15000};
  const std::vector<PlannedEviction> plan =
      PlanEvictions(forward, {"w0"}, bound);
  EXPECT_FALSE(plan.empty());
  EXPECT_EQ(plan, PlanEvictions(backward, {"w0"}, bound));
  uint64_t evicted = 0;
  for (const PlannedEviction& e : plan) evicted += e.placements;
  EXPECT_LE(forward.total() - evicted, bound.max_placements);
}

}  // namespace
}  // namespace kvindexer
