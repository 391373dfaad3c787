// MatchExternalKv: collapsing, ordering and response shape (docs/contract.md,
// "MatchExternalKv"; behaviours 2, 9 and 44 of "Reference behaviours").
#include <vector>

#include "conformance_fixture.h"

namespace kvindexer::conformance {
namespace {

class MatchTest : public ConformanceTest {
 protected:
  // The raw response (no canonical reordering), with its status checked.
  v1::MatchExternalKvResponse RawMatch(const Hashes& hashes) {
    v1::MatchExternalKvResponse resp;
    const absl::Status s =
        indexer().operations().Match(MatchRequest(hashes), &resp);
    EXPECT_TRUE(s.ok()) << s;
    return resp;
  }
  static std::vector<std::string> Workers(
      const v1::MatchExternalKvResponse& resp) {
    std::vector<std::string> out;
    for (const auto& m : resp.matches()) out.push_back(m.worker_id());
    return out;
  }
  static Hashes TierHashesOf(const v1::TierHashes& t) {
    return Hashes(t.hashes().begin(), t.hashes().end());
  }
};
KVINDEXER_INSTANTIATE_CONFORMANCE(MatchTest);

using Names = std::vector<std::string>;

// Behaviour 2.
TEST_P(MatchTest, MultipleWorkersShareTheIndex) {
  ApplyOk(Batch("worker-0", "10.0.0.1:9000").Report(kTierHbm, {1, 3}));
  ApplyOk(Batch("worker-1", "10.0.0.2:9000").Report(kTierHbm, {2, 3}));
  const auto resp = Match({1, 2, 3});
  ASSERT_EQ(Workers(resp), Names({"worker-0", "worker-1"}));
  EXPECT_EQ(At(resp.matches(), 0).address(), "10.0.0.1:9000");
  EXPECT_EQ(TierHashesOf(At(At(resp.matches(), 0).hashes_by_tier(), 0)),
            Hashes({1, 3}));
  EXPECT_EQ(At(resp.matches(), 1).address(), "10.0.0.2:9000");
  EXPECT_EQ(TierHashesOf(At(At(resp.matches(), 1).hashes_by_tier(), 0)),
            Hashes({2, 3}));
}

TEST_P(MatchTest, WorkersInFirstMetOrder) {
  ApplyOk(Batch("w-b", "b").Report(kTierHbm, {1}));
  ApplyOk(Batch("w-a", "a").Report(kTierHbm, {2}));
  ApplyOk(Batch("w-c", "c").Report(kTierHbm, {3, 1}));
  EXPECT_EQ(At(RawMatch({2, 1}).matches(), 0).worker_id(), "w-a");
  const auto raw = RawMatch({3, 2, 1});
  EXPECT_EQ(Workers(raw), Names({"w-c", "w-a", "w-b"})) << Text(raw);
  EXPECT_TRUE(MatchOrderHolds(MatchRequest({3, 2, 1}), raw));
  // Workers first met on the same block: any order, both present.
  const auto same = Match({1, 2, 3});
  EXPECT_EQ(Workers(same), Names({"w-b", "w-c", "w-a"}));
}

// Behaviour 44 as seen through MatchExternalKv.
TEST_P(MatchTest, RepeatedRequestHashesCollapseKeepingFirstOrder) {
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1, -2, 3}));
  const auto resp = Match({1, -2, 1, 3});
  ASSERT_EQ(resp.matches_size(), 1);
  EXPECT_EQ(TierHashesOf(At(At(resp.matches(), 0).hashes_by_tier(), 0)),
            Hashes({1, -2, 3}));
  const auto reversed = Match({3, 3, -2, 1, -2});
  EXPECT_EQ(TierHashesOf(At(At(reversed.matches(), 0).hashes_by_tier(), 0)),
            Hashes({3, -2, 1}));
}

TEST_P(MatchTest, HashesWithinATierFollowTheRequestNotTheReport) {
  ApplyOk(Batch("w", "a").Report(kTierHbm, {3, 2, 1}));
  EXPECT_EQ(
      TierHashesOf(At(At(Match({1, 2, 3}).matches(), 0).hashes_by_tier(), 0)),
      Hashes({1, 2, 3}));
  EXPECT_EQ(
      TierHashesOf(At(At(Match({3, 9, 1}).matches(), 0).hashes_by_tier(), 0)),
      Hashes({3, 1}));
}

TEST_P(MatchTest, TiersAscendingOnlyTiersWithMatches) {
  ApplyOk(Batch("w", "a")
              .Report(kTierSsd, {1, 2})
              .Report(kTierDram, {2})
              .Report(kTierHbm, {3}));
  const auto resp = Match({1, 2});
  ASSERT_EQ(resp.matches_size(), 1);
  const auto& tiers = At(resp.matches(), 0).hashes_by_tier();
  ASSERT_EQ(tiers.size(), 2);
  EXPECT_EQ(tiers[0].tier(), v1::TIER_DRAM);
  EXPECT_EQ(TierHashesOf(tiers[0]), Hashes({2}));
  EXPECT_EQ(tiers[1].tier(), v1::TIER_SSD);
  EXPECT_EQ(TierHashesOf(tiers[1]), Hashes({1, 2}));
}

TEST_P(MatchTest, SideArraysAlwaysFilledAndAligned) {
  ApplyOk(Batch("w", "a")
              .Report(kTierHbm, {1, 2})
              .Report(kTierDram, {1, 2}, {kComponentFull | kComponentMamba, 0},
                      {0, 48}));
  const auto resp = Match({2, 1});
  ASSERT_EQ(resp.matches_size(), 1);
  const auto& hbm = At(At(resp.matches(), 0).hashes_by_tier(), 0);
  EXPECT_EQ(TierHashesOf(hbm), Hashes({2, 1}));
  EXPECT_EQ(Masks(hbm.component_masks().begin(), hbm.component_masks().end()),
            Masks({0, 0}));
  // block_sizes is the block's shared token count, whichever tier set it.
  EXPECT_EQ(Masks(hbm.block_sizes().begin(), hbm.block_sizes().end()),
            Masks({48, 0}));
  const auto& dram = At(At(resp.matches(), 0).hashes_by_tier(), 1);
  EXPECT_EQ(Masks(dram.component_masks().begin(), dram.component_masks().end()),
            Masks({0, kComponentFull | kComponentMamba}));
  EXPECT_EQ(Masks(dram.block_sizes().begin(), dram.block_sizes().end()),
            Masks({48, 0}));
}

TEST_P(MatchTest, NoMatchIsOkAndEmpty) {
  EXPECT_EQ(Match({1, 2, 3}).matches_size(), 0);
  ApplyOk(Batch("w", "a").Report(kTierHbm, {4}));
  EXPECT_EQ(Match({1, 2, 3}).matches_size(), 0);
}

TEST_P(MatchTest, EmptyAddressIsListed) {
  ApplyOk(Batch("w", "").Report(kTierHbm, {1}));
  const auto resp = Match({1});
  ASSERT_EQ(resp.matches_size(), 1);
  EXPECT_EQ(At(resp.matches(), 0).worker_id(), "w");
  EXPECT_EQ(At(resp.matches(), 0).address(), "");
}

TEST_P(MatchTest, MaximumRequestSize) {
  ApplyOk(Batch("w", "a").Report(kTierHbm, Range(-8192, 16384)));
  const auto resp = Match(Range(-8192, 16384));
  ASSERT_EQ(resp.matches_size(), 1);
  EXPECT_EQ(TierHashesOf(At(At(resp.matches(), 0).hashes_by_tier(), 0)),
            Range(-8192, 16384));
}

}  // namespace
}  // namespace kvindexer::conformance
