// ApplyExternalKvBatch semantics (docs/contract.md,
// "ApplyExternalKvBatch > Apply semantics"; behaviours 9–23 of
// "Reference behaviours").
#include <vector>

#include "conformance_fixture.h"

namespace kvindexer::conformance {
namespace {

class ApplySemanticsTest : public ConformanceTest {};
KVINDEXER_INSTANTIATE_CONFORMANCE(ApplySemanticsTest);

using TierList = std::vector<int>;
const TierList kNone = {};
const TierList kHbm = {kTierHbm};
const TierList kDram = {kTierDram};

// Behaviour 9.
TEST_P(ApplySemanticsTest, ReportThenMatchListsWorkerAndMisses) {
  ApplyOk(Batch("w1", "10.0.0.1:9000").Report(kTierHbm, {1, 2}));
  const auto resp = Match({1, 2, 3});
  ASSERT_EQ(resp.matches_size(), 1) << Text(resp);
  const auto& m = At(resp.matches(), 0);
  EXPECT_EQ(m.worker_id(), "w1");
  EXPECT_EQ(m.address(), "10.0.0.1:9000");
  ASSERT_EQ(m.hashes_by_tier_size(), 1);
  EXPECT_EQ(At(m.hashes_by_tier(), 0).tier(), v1::TIER_HBM);
  EXPECT_EQ(Hashes(At(m.hashes_by_tier(), 0).hashes().begin(),
                   At(m.hashes_by_tier(), 0).hashes().end()),
            Hashes({1, 2}));
  EXPECT_EQ(Tiers(3), kNone);
}

// Behaviour 10.
TEST_P(ApplySemanticsTest, ThreeHundredHashesKeepRequestOrder) {
  const Hashes hashes = Range(0, 300);
  ApplyOk(Batch("w1", "a").Report(kTierHbm, hashes));
  const auto resp = Match(hashes);
  ASSERT_EQ(resp.matches_size(), 1);
  ASSERT_EQ(At(resp.matches(), 0).hashes_by_tier_size(), 1);
  const auto& t = At(At(resp.matches(), 0).hashes_by_tier(), 0);
  EXPECT_EQ(t.tier(), v1::TIER_HBM);
  EXPECT_EQ(Hashes(t.hashes().begin(), t.hashes().end()), hashes);
}

// Behaviour 11.
TEST_P(ApplySemanticsTest, RepeatedReportIsIdempotent) {
  const Batch report = Batch("w1", "a").Report(kTierHbm, {1});
  for (int i = 0; i < 3; ++i) ApplyOk(report);
  EXPECT_EQ(Tiers(1), kHbm);
  const auto resp = Match({1});
  ASSERT_EQ(resp.matches_size(), 1);
  EXPECT_EQ(At(At(resp.matches(), 0).hashes_by_tier(), 0).hashes_size(), 1);
}

// Behaviour 12.
TEST_P(ApplySemanticsTest, ReportRevokeReportBatchTwice) {
  const Batch batch = Batch("w1", "a")
                          .Report(kTierHbm, {9})
                          .Revoke(kTierHbm, {9})
                          .Report(kTierHbm, {9});
  ApplyOk(batch);
  EXPECT_EQ(Tiers(9), kHbm);
  ApplyOk(batch);
  EXPECT_EQ(Tiers(9), kHbm);
}

// Behaviour 13.
TEST_P(ApplySemanticsTest, ReportRevokeReportAcrossBatches) {
  ApplyOk(Batch("w1", "a").Report(kTierHbm, {1}));
  ApplyOk(Batch("w1", "a").Revoke(kTierHbm, {1}));
  EXPECT_EQ(Tiers(1), kNone);
  EXPECT_EQ(Match({1}).matches_size(), 0);
  ApplyOk(Batch("w1", "a").Report(kTierHbm, {1}));
  EXPECT_EQ(Tiers(1), kHbm);
}

// Behaviour 14.
TEST_P(ApplySemanticsTest, RevokedHashesStayGoneWhenOthersReturn) {
  ApplyOk(Batch("w1", "a").Report(kTierHbm, {1, 2}));
  ApplyOk(Batch("w1", "a").Revoke(kTierHbm, {1, 2}));
  ApplyOk(Batch("w1", "a").Report(kTierHbm, {1}).Report(kTierHbm, {3}));
  EXPECT_EQ(Tiers(1), kHbm);
  EXPECT_EQ(Tiers(2), kNone);
  EXPECT_EQ(Tiers(3), kHbm);
}

// Behaviour 15.
TEST_P(ApplySemanticsTest, TwoTiersListedAscending) {
  ApplyOk(Batch("w1", "a").Report(kTierDram, {1}));
  const Batch hbm = Batch("w1", "a").Report(kTierHbm, {1});
  ApplyOk(hbm);
  ApplyOk(hbm);
  EXPECT_EQ(Tiers(1), TierList({kTierHbm, kTierDram}));
  const auto resp = Match({1});
  ASSERT_EQ(resp.matches_size(), 1);
  ASSERT_EQ(At(resp.matches(), 0).hashes_by_tier_size(), 2);
  EXPECT_EQ(At(At(resp.matches(), 0).hashes_by_tier(), 0).tier(), v1::TIER_HBM);
  EXPECT_EQ(At(At(resp.matches(), 0).hashes_by_tier(), 1).tier(),
            v1::TIER_DRAM);
}

// Behaviour 16.
TEST_P(ApplySemanticsTest, RevokeAtOneTierKeepsTheOther) {
  ApplyOk(Batch("w1", "a")
              .Report(kTierHbm, {1})
              .Report(kTierDram, {1})
              .Revoke(kTierHbm, {1}));
  EXPECT_EQ(Tiers(1), kDram);
}

// Behaviour 17.
TEST_P(ApplySemanticsTest, RevokeUnknownHashSucceeds) {
  ApplyOk(Batch("w1", "a").Revoke(kTierHbm, {404}));
  EXPECT_EQ(Match({404}).matches_size(), 0);
  // Revoking at a tier where only another worker holds the hash is a no-op.
  ApplyOk(Batch("w2", "b").Report(kTierHbm, {405}));
  ApplyOk(Batch("w1", "a").Revoke(kTierHbm, {405}));
  EXPECT_EQ(Tiers(405, "w2"), kHbm);
}

// Behaviour 18.
TEST_P(ApplySemanticsTest, TwoWorkersAtDifferentTiers) {
  ApplyOk(Batch("w1", "a1").Report(kTierHbm, {1}));
  ApplyOk(Batch("w2", "a2").Report(kTierDram, {1}));
  const auto resp = Match({1});
  ASSERT_EQ(resp.matches_size(), 2) << Text(resp);
  EXPECT_EQ(At(resp.matches(), 0).worker_id(), "w1");  // canonical: by id
  EXPECT_EQ(At(resp.matches(), 0).address(), "a1");
  EXPECT_EQ(At(resp.matches(), 1).worker_id(), "w2");
  EXPECT_EQ(At(resp.matches(), 1).address(), "a2");
  EXPECT_EQ(Tiers(1, "w1"), kHbm);
  EXPECT_EQ(Tiers(1, "w2"), kDram);
}

// Behaviour 19.
TEST_P(ApplySemanticsTest, ClearAllAtTierRevokesThatTierOnly) {
  ApplyOk(Batch("w1", "a").Report(kTierHbm, {1, 2, 3}).Report(kTierDram, {1}));
  ApplyOk(Batch("w2", "b").Report(kTierHbm, {2}));
  ApplyOk(Batch("w1", "a").Clear(kTierHbm));
  EXPECT_EQ(Tiers(1), kDram);
  EXPECT_EQ(Tiers(2, "w1"), kNone);
  EXPECT_EQ(Tiers(2, "w2"), kHbm);  // other workers untouched
  EXPECT_EQ(Tiers(3), kNone);
}

TEST_P(ApplySemanticsTest, ClearIgnoresItsHashesAndIsANoOpWhenEmpty) {
  ApplyOk(Batch("w1", "a").Clear(kTierSsd, {77}));
  ApplyOk(Batch("w1", "a").Report(kTierSsd, {5, 6}));
  ApplyOk(Batch("w1", "a").Clear(kTierSsd, {5}));  // listed hashes ignored
  EXPECT_EQ(Tiers(5), kNone);
  EXPECT_EQ(Tiers(6), kNone);
  // Clearing twice, and reporting again afterwards, behave.
  ApplyOk(Batch("w1", "a").Clear(kTierSsd));
  ApplyOk(Batch("w1", "a").Report(kTierSsd, {6}));
  EXPECT_EQ(Tiers(6), TierList({kTierSsd}));
}

// Behaviour 23.
TEST_P(ApplySemanticsTest, ActionsApplyInOrder) {
  ApplyOk(Batch("w1", "a").Revoke(kTierHbm, {5}).Report(kTierHbm, {5}));
  EXPECT_EQ(Tiers(5), kHbm);
  ApplyOk(Batch("w1", "a").Report(kTierHbm, {6}).Revoke(kTierHbm, {6}));
  EXPECT_EQ(Tiers(6), kNone);
  // A report followed by a clear of the same tier in one batch.
  ApplyOk(Batch("w1", "a").Report(kTierDram, {7}).Clear(kTierDram));
  EXPECT_EQ(Tiers(7), kNone);
  ApplyOk(Batch("w1", "a").Clear(kTierDram).Report(kTierDram, {7}));
  EXPECT_EQ(Tiers(7), kDram);
}

TEST_P(ApplySemanticsTest, AddressIsLastWriterWinsEvenWhenEmpty) {
  ApplyOk(Batch("w1", "first").Report(kTierHbm, {1}));
  ApplyOk(Batch("w1", "second"));  // no actions: refreshes the address only
  auto resp = Match({1});
  ASSERT_EQ(resp.matches_size(), 1);
  EXPECT_EQ(At(resp.matches(), 0).address(), "second");
  ApplyOk(Batch("w1", ""));
  resp = Match({1});
  ASSERT_EQ(resp.matches_size(), 1);
  EXPECT_EQ(At(resp.matches(), 0).address(), "");  // still listed by Match
}

TEST_P(ApplySemanticsTest, ReportReplacesMaskAndSizeZeroKeepsTokenCount) {
  ApplyOk(Batch("w1", "a").Report(kTierHbm, {1},
                                  {kComponentFull | kComponentSwa}, {80}));
  ApplyOk(Batch("w1", "a").Report(kTierHbm, {1}, {0}, {0}));
  auto resp = Match({1});
  ASSERT_EQ(resp.matches_size(), 1);
  const auto& t = At(At(resp.matches(), 0).hashes_by_tier(), 0);
  EXPECT_EQ(At(t.component_masks(), 0), 0u);  // replaced by legacy
  EXPECT_EQ(At(t.block_sizes(), 0), 80u);     // 0 never erases a known count
  // Token count is per block, shared by workers; the last non-zero wins.
  ApplyOk(Batch("w2", "b").Report(kTierDram, {1}, {}, {32}));
  resp = Match({1});
  ASSERT_EQ(resp.matches_size(), 2);
  for (const auto& m : resp.matches()) {
    EXPECT_EQ(At(At(m.hashes_by_tier(), 0).block_sizes(), 0), 32u)
        << m.worker_id();
  }
  // The count disappears with the block record.
  ApplyOk(Batch("w1", "a").Revoke(kTierHbm, {1}));
  ApplyOk(Batch("w2", "b").Revoke(kTierDram, {1}));
  ApplyOk(Batch("w1", "a").Report(kTierHbm, {1}));
  resp = Match({1});
  ASSERT_EQ(resp.matches_size(), 1);
  EXPECT_EQ(At(At(At(resp.matches(), 0).hashes_by_tier(), 0).block_sizes(), 0),
            0u);
}

TEST_P(ApplySemanticsTest, RepeatedHashInReportLastOccurrenceWins) {
  // The earlier occurrence's size has no effect at all.
  ApplyOk(Batch("w1", "a").Report(
      kTierHbm, {4, 1, 4}, {kComponentFull, kComponentSwa, kComponentMamba},
      {16, 0, 0}));
  const auto resp = Match({1, 4});
  ASSERT_EQ(resp.matches_size(), 1);
  const auto& t = At(At(resp.matches(), 0).hashes_by_tier(), 0);
  ASSERT_EQ(t.hashes_size(), 2);
  EXPECT_EQ(At(t.hashes(), 0), 1);
  EXPECT_EQ(At(t.component_masks(), 0), kComponentSwa);
  EXPECT_EQ(At(t.hashes(), 1), 4);
  EXPECT_EQ(At(t.component_masks(), 1), kComponentMamba);
  EXPECT_EQ(At(t.block_sizes(), 1), 0u);
}

TEST_P(ApplySemanticsTest, SpecAndEmptyActionsStillUpsertTheWorker) {
  // A batch with no actions creates the worker record; a later report then
  // carries the address.
  ApplyOk(Batch("w1", "a"));
  EXPECT_EQ(Match({1}).matches_size(), 0);
  ApplyOk(Batch("w1", "a").Report(kTierHbm, {1}));
  EXPECT_EQ(At(Match({1}).matches(), 0).address(), "a");
}

TEST_P(ApplySemanticsTest, NegativeAndExtremeHashes) {
  const Hashes hashes = {-1, INT64_MIN, INT64_MAX, 0};
  ApplyOk(Batch("w1", "a").Report(kTierHbm, hashes));
  const auto resp = Match(hashes);
  ASSERT_EQ(resp.matches_size(), 1);
  const auto& t = At(At(resp.matches(), 0).hashes_by_tier(), 0);
  EXPECT_EQ(Hashes(t.hashes().begin(), t.hashes().end()), hashes);
}

}  // namespace
}  // namespace kvindexer::conformance
