// MatchExternalKvPrefix: candidate selection, the FULL/SWA/MAMBA rules and
// result assembly (docs/contract.md, "MatchExternalKvPrefix"; behaviours 24–31
// and 43 of "Reference behaviours", with the "Rule vectors" V1–V10 expressed
// as applies plus prefix queries).
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "conformance_fixture.h"

namespace kvindexer::conformance {
namespace {

class PrefixRulesTest : public ConformanceTest {
 protected:
  using PrefixMap = std::map<std::string, uint32_t>;

  // The prefix of a single worker "w" over `query` (0 when it is not listed).
  uint32_t PrefixOf(const Hashes& query, uint32_t max_blocks = 0) {
    const auto resp = Prefix(query, max_blocks);
    const auto prefixes = Prefixes(resp);
    const auto it = prefixes.find("w");
    return it == prefixes.end() ? 0 : it->second;
  }
};
KVINDEXER_INSTANTIATE_CONFORMANCE(PrefixRulesTest);

const v1::WorkerCacheSpec kSwaSpec =
    Spec(kComponentFull | kComponentSwa, 100, kTierBitHbm | kTierBitDram,
         kTierBitHbm);

// Behaviour 24.
TEST_P(PrefixRulesTest, SinglePassAgreesWithRecomputation) {
  ApplyOk(Batch("w-long", "10.0.0.1:1").Report(kTierHbm, {1, 2, 3, 4}));
  ApplyOk(Batch("w-short", "10.0.0.2:1").Report(kTierHbm, {1, 2}));
  ApplyOk(Batch("w-hole", "10.0.0.3:1").Report(kTierHbm, {1, 3, 4}));
  ApplyOk(Batch("w-noaddr", "").Report(kTierHbm, {1, 2}));
  const auto resp = Prefix({1, 2, 3, 4});
  EXPECT_EQ(Prefixes(resp),
            PrefixMap({{"w-hole", 1}, {"w-long", 4}, {"w-short", 2}}));
  EXPECT_EQ(resp.best_prefix_blocks(), 4u);
  ASSERT_GT(resp.matches_size(), 0);
  EXPECT_EQ(At(resp.matches(), 0).matched_prefix_blocks(), 4u);
  EXPECT_EQ(At(resp.matches(), 0).worker_address(), "10.0.0.1:1");
  EXPECT_EQ(resp.blocks_read(), 4u);
}

// Behaviour 25.
TEST_P(PrefixRulesTest, FirstBlockMiss) {
  ApplyOk(Batch("w", "a").Report(kTierHbm, {2, 3}));
  const auto resp = Prefix({1, 2, 3});
  EXPECT_EQ(resp.matches_size(), 0);
  EXPECT_EQ(resp.best_prefix_blocks(), 0u);
  EXPECT_EQ(resp.blocks_read(), 1u);
  // A fully revoked first block is a miss too.
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1}).Revoke(kTierHbm, {1}));
  EXPECT_EQ(Prefix({1, 2, 3}).blocks_read(), 1u);
}

// Behaviour 26.
TEST_P(PrefixRulesTest, MaxBlocksCapsTheScan) {
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1, 2, 3, 4}));
  auto resp = Prefix({1, 2, 3, 4}, 2);
  EXPECT_EQ(resp.best_prefix_blocks(), 2u);
  EXPECT_EQ(resp.blocks_read(), 2u);
  EXPECT_EQ(Prefixes(resp), PrefixMap({{"w", 2}}));
  // A cap above the request length means the whole request.
  resp = Prefix({1, 2, 3, 4}, 100);
  EXPECT_EQ(resp.best_prefix_blocks(), 4u);
  EXPECT_EQ(resp.blocks_read(), 4u);
}

TEST_P(PrefixRulesTest, ScanReadsEveryBlockEvenWhenAllCandidatesSettled) {
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1}));
  const auto resp = Prefix({1, 2, 3, 4, 5, 6});
  EXPECT_EQ(resp.best_prefix_blocks(), 1u);
  EXPECT_EQ(resp.blocks_read(), 6u);
}

// Behaviour 5: a prefix longer than one apply chunk; prefix queries have no
// hash cap.
TEST_P(PrefixRulesTest, PrefixLongerThanOneApplyChunk) {
  ApplyOk(Batch("w", "a").Report(kTierHbm, Range(0, 16384)));
  ApplyOk(Batch("w", "a").Report(kTierHbm, {16384}));
  const auto resp = Prefix(Range(0, 16385));
  EXPECT_EQ(resp.best_prefix_blocks(), 16385u);
  EXPECT_EQ(resp.blocks_read(), 16385u);
}

// Behaviour 6 at the Indexer level: a prefix query far above the apply and
// match bounds is served.
TEST_P(PrefixRulesTest, VeryLongPrefixQuery) {
  ApplyOk(Batch("w", "a").Report(kTierHbm, {-1}));
  Hashes hashes = Range(0, 600000);
  hashes[0] = -1;
  const auto resp = Prefix(hashes);
  EXPECT_EQ(resp.best_prefix_blocks(), 1u);
  EXPECT_EQ(resp.blocks_read(), 600000u);
}

// Behaviour 27.
TEST_P(PrefixRulesTest, ComponentAwareWorkerSwaWindow) {
  ApplyOk(Batch("w", "a").Spec(kSwaSpec).Report(
      kTierHbm, {1, 2, 3, 4},
      {kComponentFull | kComponentSwa, kComponentFull | kComponentSwa,
       kComponentFull | kComponentSwa, kComponentFull},
      {50, 50, 50, 50}));
  EXPECT_EQ(PrefixOf({1, 2, 3, 4}), 3u);
}

// Behaviour 28.
TEST_P(PrefixRulesTest, ReportReplacesTheComponentSet) {
  ApplyOk(Batch("w", "a").Spec(kSwaSpec).Report(
      kTierHbm, {1, 2},
      {kComponentFull | kComponentSwa, kComponentFull | kComponentSwa},
      {80, 80}));
  EXPECT_EQ(Prefix({1, 2}).best_prefix_blocks(), 2u);
  ApplyOk(Batch("w", "a").Spec(kSwaSpec).Report(kTierHbm, {2}, {kComponentFull},
                                                {80}));
  EXPECT_EQ(Prefix({1, 2}).best_prefix_blocks(), 1u);
  const auto resp = Match({1, 2});
  ASSERT_EQ(resp.matches_size(), 1);
  ASSERT_EQ(At(resp.matches(), 0).hashes_by_tier_size(), 1);
  const auto& t = At(At(resp.matches(), 0).hashes_by_tier(), 0);
  EXPECT_EQ(t.tier(), v1::TIER_HBM);
  EXPECT_EQ(Masks(t.component_masks().begin(), t.component_masks().end()),
            Masks({kComponentFull | kComponentSwa, kComponentFull}));
  EXPECT_EQ(Masks(t.block_sizes().begin(), t.block_sizes().end()),
            Masks({80, 80}));
}

// Behaviour 29 (and V2).
TEST_P(PrefixRulesTest, ComponentsWithoutSpecFailClosed) {
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1, 2},
                                 {kComponentFull, kComponentFull}, {16, 16}));
  const auto resp = Prefix({1, 2});
  EXPECT_EQ(resp.matches_size(), 0);
  EXPECT_EQ(resp.best_prefix_blocks(), 0u);
  EXPECT_EQ(resp.blocks_read(), 2u);  // the first block was held
}

// Behaviour 30.
TEST_P(PrefixRulesTest, RepeatedHashInReportLastEntryWins) {
  ApplyOk(Batch("w", "a").Spec(kSwaSpec).Report(
      kTierHbm, {1, 1}, {kComponentFull | kComponentSwa, kComponentFull},
      {80, 80}));
  EXPECT_EQ(Prefix({1}).best_prefix_blocks(), 0u);
}

// Behaviour 31.
TEST_P(PrefixRulesTest, BatchWithoutSpecClearsTheSpec) {
  ApplyOk(Batch("w", "a").Spec(kSwaSpec).Report(
      kTierHbm, {1}, {kComponentFull | kComponentSwa}, {200}));
  EXPECT_EQ(Prefix({1}).best_prefix_blocks(), 1u);
  ApplyOk(Batch("w", "a").Report(kTierDram, {2}));
  const auto resp = Prefix({1});
  EXPECT_EQ(resp.matches_size(), 0);
  EXPECT_EQ(resp.best_prefix_blocks(), 0u);
}

// V1: legacy presence stops at the first absent block.
TEST_P(PrefixRulesTest, V1LegacyStopsAtFirstGap) {
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1, 2, 3, 5}));
  EXPECT_EQ(PrefixOf({1, 2, 3, 4, 5}), 3u);
}

// V2.
TEST_P(PrefixRulesTest, V2FullWithoutSpecIsExcluded) {
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1, 2},
                                 {kComponentFull, kComponentFull}));
  EXPECT_EQ(PrefixOf({1, 2}), 0u);
}

// V3: FULL from HBM or DRAM; an SWA-only block breaks FULL.
TEST_P(PrefixRulesTest, V3FullOnlyAcrossTiers) {
  ApplyOk(Batch("w", "a")
              .Spec(Spec(kComponentFull, 0, kTierBitHbm | kTierBitDram))
              .Report(kTierHbm, {1}, {kComponentFull})
              .Report(kTierDram, {2}, {kComponentFull})
              .Report(kTierHbm, {3}, {kComponentSwa})
              .Report(kTierHbm, {4}, {kComponentFull}));
  EXPECT_EQ(PrefixOf({1, 2, 3, 4}), 2u);
}

// V4: SSD never serves a component, yet makes the worker a candidate.
TEST_P(PrefixRulesTest, V4FullAtSsdIsNeverServable) {
  ApplyOk(Batch("w", "a")
              .Spec(Spec(kComponentFull, 0, kTierBitHbm | kTierBitDram))
              .Report(kTierSsd, {1}, {kComponentFull}));
  const auto resp = Prefix({1});
  EXPECT_EQ(resp.matches_size(), 0);
  EXPECT_EQ(resp.blocks_read(), 1u);
  // Declaring SSD in the spec does not make it servable either.
  ApplyOk(Batch("w", "a")
              .Spec(Spec(kComponentFull, 0,
                         kTierBitHbm | kTierBitDram | kTierBitSsd))
              .Report(kTierSsd, {1}, {kComponentFull}));
  EXPECT_EQ(PrefixOf({1}), 0u);
}

// V5.
TEST_P(PrefixRulesTest, V5UnbrokenSwaRun) {
  const auto fs = kComponentFull | kComponentSwa;
  ApplyOk(Batch("w", "a")
              .Spec(Spec(kComponentFull | kComponentSwa, 100, kTierBitHbm,
                         kTierBitHbm))
              .Report(kTierHbm, {1, 2, 3, 4, 5}, {fs, fs, fs, fs, fs},
                      {50, 50, 50, 50, 50}));
  EXPECT_EQ(PrefixOf({1, 2, 3, 4, 5}), 5u);
}

// V6.
TEST_P(PrefixRulesTest, V6SwaHoleNeedsAFullWindowAfterIt) {
  const auto fs = kComponentFull | kComponentSwa;
  ApplyOk(Batch("w", "a")
              .Spec(Spec(kComponentFull | kComponentSwa, 100, kTierBitHbm,
                         kTierBitHbm))
              .Report(kTierHbm, {1, 2, 3, 4, 5},
                      {fs, fs, fs, kComponentFull, fs}, {50, 50, 50, 50, 50}));
  EXPECT_EQ(PrefixOf({1, 2, 3, 4, 5}), 3u);
}

TEST_P(PrefixRulesTest, SwaRunAfterHoleReachingTheWindowCounts) {
  const auto fs = kComponentFull | kComponentSwa;
  ApplyOk(Batch("w", "a")
              .Spec(Spec(kComponentFull | kComponentSwa, 100, kTierBitHbm,
                         kTierBitHbm))
              .Report(kTierHbm, {1, 2, 3, 4}, {fs, kComponentFull, fs, fs},
                      {50, 50, 60, 50}));
  EXPECT_EQ(PrefixOf({1, 2, 3, 4}), 4u);
  EXPECT_EQ(PrefixOf({1, 2, 3}), 1u);  // run of 60 < 100 at block 3
}

// V7: the head of the prompt counts as unlimited history.
TEST_P(PrefixRulesTest, V7HeadRule) {
  const auto fs = kComponentFull | kComponentSwa;
  ApplyOk(
      Batch("w", "a")
          .Spec(Spec(kComponentFull | kComponentSwa, 1000,
                     kTierBitHbm | kTierBitDram, kTierBitHbm | kTierBitDram))
          .Report(kTierHbm, {1, 2}, {fs, fs}, {16, 16}));
  EXPECT_EQ(PrefixOf({1, 2}), 2u);
}

// V8: MAMBA is checked only at the boundary block.
TEST_P(PrefixRulesTest, V8MambaOnlyAtBoundary) {
  const auto servable = kTierBitHbm | kTierBitDram;
  ApplyOk(Batch("w", "a")
              .Spec(Spec(kComponentFull | kComponentMamba, 0, servable,
                         servable, servable))
              .Report(kTierHbm, {1, 2, 3, 4},
                      {kComponentFull, kComponentFull, kComponentFull,
                       kComponentFull | kComponentMamba}));
  EXPECT_EQ(PrefixOf({1, 2, 3, 4}), 4u);
  EXPECT_EQ(PrefixOf({1, 2}), 0u);
  EXPECT_EQ(PrefixOf({1, 2, 3, 4}, 2), 0u);
}

// V9: invalid specs fail closed.
TEST_P(PrefixRulesTest, V9InvalidSpecs) {
  const auto servable = kTierBitHbm | kTierBitDram;
  const v1::WorkerCacheSpec invalid[] = {
      Spec(0, 100, servable, servable),  // no components
      Spec(kComponentFull | kComponentSwa, 100, servable, servable, 0,
           2),  // version 2
      Spec(kComponentFull | kComponentSwa, 0, servable,
           servable),  // SWA, no window
  };
  for (const auto& spec : invalid) {
    SCOPED_TRACE(Text(spec));
    ApplyOk(Batch("w", "a").Spec(spec).Report(
        kTierHbm, {1}, {kComponentFull | kComponentSwa}, {64}));
    EXPECT_EQ(PrefixOf({1}), 0u);
  }
  // Version 0 is accepted like version 1.
  ApplyOk(Batch("w", "a")
              .Spec(Spec(kComponentFull | kComponentSwa, 100, servable,
                         servable, 0, 0))
              .Report(kTierHbm, {1}, {kComponentFull | kComponentSwa}, {64}));
  EXPECT_EQ(PrefixOf({1}), 1u);
}

// V10: a spec with legacy placements never has FULL.
TEST_P(PrefixRulesTest, V10SpecWithLegacyPlacements) {
  ApplyOk(Batch("w", "a")
              .Spec(Spec(kComponentFull | kComponentSwa, 100,
                         kTierBitHbm | kTierBitDram, kTierBitHbm))
              .Report(kTierHbm, {1, 2}));
  EXPECT_EQ(PrefixOf({1, 2}), 0u);
}

TEST_P(PrefixRulesTest, FullIsRequiredEvenWithoutTheFullBit) {
  ApplyOk(
      Batch("w", "a")
          .Spec(Spec(kComponentSwa, 10, kTierBitHbm, kTierBitHbm))
          .Report(kTierHbm, {1, 2}, {kComponentSwa, kComponentSwa}, {16, 16}));
  EXPECT_EQ(PrefixOf({1, 2}), 0u);
  ApplyOk(Batch("w", "a")
              .Spec(Spec(kComponentSwa, 10, kTierBitHbm, kTierBitHbm))
              .Report(kTierHbm, {1, 2},
                      {kComponentFull | kComponentSwa,
                       kComponentFull | kComponentSwa},
                      {16, 16}));
  EXPECT_EQ(PrefixOf({1, 2}), 2u);
}

TEST_P(PrefixRulesTest, ComponentsMaySitAtDifferentTiers) {
  ApplyOk(
      Batch("w", "a")
          .Spec(Spec(kComponentFull | kComponentSwa, 10, kTierBitDram,
                     kTierBitHbm))
          .Report(kTierDram, {1, 2}, {kComponentFull, kComponentFull}, {16, 16})
          .Report(kTierHbm, {1, 2}, {kComponentSwa, kComponentSwa}));
  EXPECT_EQ(PrefixOf({1, 2}), 2u);
  // The tier masks are honoured: FULL at HBM is not in full_tier_mask.
  ApplyOk(Batch("w", "a")
              .Spec(Spec(kComponentFull | kComponentSwa, 10, kTierBitDram,
                         kTierBitHbm))
              .Report(kTierHbm, {1, 2},
                      {kComponentFull | kComponentSwa,
                       kComponentFull | kComponentSwa})
              .Revoke(kTierDram, {1, 2}));
  EXPECT_EQ(PrefixOf({1, 2}), 0u);
}

TEST_P(PrefixRulesTest, OddMaskBitsAreIgnoredButCountAsComponents) {
  // Bits beyond MAMBA are not components, but a mask of 8 is still non-zero.
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1, 2}, {8, 8}));
  EXPECT_EQ(PrefixOf({1, 2}), 0u);  // legacy worker fails closed
  ApplyOk(Batch("w", "a")
              .Spec(Spec(kComponentFull, 0, kTierBitHbm))
              .Report(kTierHbm, {1, 2}, {kComponentFull | 8, 0xFFFFFFF9u}));
  EXPECT_EQ(PrefixOf({1, 2}), 2u);
}

TEST_P(PrefixRulesTest, LegacyFailsClosedOnMaskAnywhereInTheRange) {
  ApplyOk(Batch("w", "a")
              .Report(kTierHbm, {1, 2})
              .Report(kTierDram, {4}, {kComponentFull}));
  EXPECT_EQ(PrefixOf({1, 2, 3, 4}), 0u);     // mask after the gap counts
  EXPECT_EQ(PrefixOf({1, 2, 3, 4}, 3), 2u);  // outside the limit it does not
  // A mask on a block that also has a legacy placement at another tier.
  ApplyOk(Batch("v", "b")
              .Report(kTierHbm, {1, 2})
              .Report(kTierSsd, {2}, {kComponentMamba}));
  EXPECT_EQ(Prefixes(Prefix({1, 2})).count("v"), 0u);
}

TEST_P(PrefixRulesTest, LegacyPresenceIgnoresTier) {
  ApplyOk(Batch("w", "a")
              .Report(kTierSsd, {1})
              .Report(kTierDram, {2})
              .Report(kTierHbm, {3}));
  EXPECT_EQ(PrefixOf({1, 2, 3}), 3u);
}

TEST_P(PrefixRulesTest, EmptyAddressExcludedFromPrefixOnly) {
  ApplyOk(Batch("w", "").Report(kTierHbm, {1, 2}));
  ApplyOk(Batch("v", "b").Report(kTierHbm, {1}));
  const auto resp = Prefix({1, 2});
  EXPECT_EQ(Prefixes(resp), PrefixMap({{"v", 1}}));
  EXPECT_EQ(resp.best_prefix_blocks(), 1u);
  EXPECT_EQ(Match({1}).matches_size(), 2);
  // Only an empty address excludes; the address is refreshed per batch.
  ApplyOk(Batch("w", "a"));
  EXPECT_EQ(Prefixes(Prefix({1, 2})), PrefixMap({{"v", 1}, {"w", 2}}));
}

TEST_P(PrefixRulesTest, CandidatesComeOnlyFromTheFirstBlock) {
  ApplyOk(Batch("head", "a").Report(kTierHbm, {1}));
  ApplyOk(Batch("tail", "b").Report(kTierHbm, {2, 3, 4}));
  const auto resp = Prefix({1, 2, 3, 4});
  EXPECT_EQ(Prefixes(resp), PrefixMap({{"head", 1}}));
  EXPECT_EQ(resp.blocks_read(), 4u);
  // A worker holding the first block only at SSD is a candidate too.
  ApplyOk(Batch("ssd", "c").Report(kTierSsd, {1, 2}));
  EXPECT_EQ(Prefixes(Prefix({1, 2})), PrefixMap({{"head", 1}, {"ssd", 2}}));
}

TEST_P(PrefixRulesTest, RepeatedHashesInQueryAreScannedAsGiven) {
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1, 2}));
  EXPECT_EQ(PrefixOf({1, 2, 1, 2}), 4u);
  const auto resp = Prefix({1, 1, 3, 1});
  EXPECT_EQ(resp.best_prefix_blocks(), 2u);
  EXPECT_EQ(resp.blocks_read(), 4u);
}

TEST_P(PrefixRulesTest, ResultsSortedDescendingAcrossManyWorkers) {
  for (int i = 0; i < 8; ++i) {
    ApplyOk(Batch(absl::StrCat("w", i), absl::StrCat("addr", i))
                .Report(kTierHbm, Range(100, i % 4 + 1)));
  }
  const auto resp = Prefix(Range(100, 6));
  EXPECT_EQ(resp.matches_size(), 8);
  EXPECT_EQ(resp.best_prefix_blocks(), 4u);
  for (const auto& m : resp.matches()) {
    const int i = std::stoi(m.worker_id().substr(1));
    EXPECT_EQ(m.matched_prefix_blocks(), static_cast<uint32_t>(i % 4 + 1));
    EXPECT_EQ(m.worker_address(), "addr" + std::to_string(i));
  }
}

}  // namespace
}  // namespace kvindexer::conformance
