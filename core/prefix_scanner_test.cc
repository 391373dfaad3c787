#include "core/prefix_scanner.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <random>
#include <utility>
#include <vector>

namespace kvindexer {
namespace prefix_scanner_test {
namespace {

constexpr uint32_t F = kComponentFull;
constexpr uint32_t S = kComponentSwa;
constexpr uint32_t M = kComponentMamba;

// A block held at the given (tier, mask) pairs; no pairs means absent.
WorkerBlock Block(std::initializer_list<std::pair<uint32_t, uint32_t>> pairs,
                  uint32_t tokens = 0) {
  WorkerBlock block;
  for (const auto& [tier, mask] : pairs) block.Add(tier, mask);
  block.token_count = tokens;
  return block;
}

WorkerBlock Absent() { return WorkerBlock{}; }

CacheSpec Spec(uint32_t components, uint32_t window, uint32_t full_tiers,
               uint32_t swa_tiers, uint32_t mamba_tiers, uint32_t version = 1) {
  return CacheSpec{version,    components, window,
                   full_tiers, swa_tiers,  mamba_tiers};
}

uint32_t Scan(const CacheSpec* spec, const std::vector<WorkerBlock>& blocks) {
  PrefixScanner scanner(spec);
  for (const WorkerBlock& b : blocks) scanner.Push(b);
  return scanner.result();
}

TEST(PrefixScannerVectors, V1LegacyStopsAtFirstGap) {
  const auto held = Block({{kTierHbm, 0}});
  EXPECT_EQ(Scan(nullptr, {held, held, held, Absent(), held}), 3u);
}

TEST(PrefixScannerVectors, V2ComponentsWithoutSpecFailClosed) {
  const auto full = Block({{kTierHbm, F}});
  EXPECT_EQ(Scan(nullptr, {full, full}), 0u);
}

TEST(PrefixScannerVectors, V3FullRunEndsAtSwaOnlyBlock) {
  const CacheSpec spec = Spec(F, 0, kTierBitHbm | kTierBitDram, 0, 0);
  EXPECT_EQ(Scan(&spec, {Block({{kTierHbm, F}}), Block({{kTierDram, F}}),
                         Block({{kTierHbm, S}}), Block({{kTierHbm, F}})}),
            2u);
}

TEST(PrefixScannerVectors, V4SsdNeverServes) {
  const CacheSpec spec = Spec(F, 0, kTierBitHbm | kTierBitDram, 0, 0);
  EXPECT_EQ(Scan(&spec, {Block({{kTierSsd, F}})}), 0u);
}

TEST(PrefixScannerVectors, V5SwaRunCoversWholePrompt) {
  const CacheSpec spec = Spec(F | S, 100, kTierBitHbm, kTierBitHbm, 0);
  std::vector<WorkerBlock> blocks(5, Block({{kTierHbm, F | S}}, 50));
  EXPECT_EQ(Scan(&spec, blocks), 5u);
}

TEST(PrefixScannerVectors, V6SwaHoleNeedsAWindowAfterIt) {
  const CacheSpec spec = Spec(F | S, 100, kTierBitHbm, kTierBitHbm, 0);
  std::vector<WorkerBlock> blocks(5, Block({{kTierHbm, F | S}}, 50));
  blocks[3] = Block({{kTierHbm, F}}, 50);
  EXPECT_EQ(Scan(&spec, blocks), 3u);
}

TEST(PrefixScannerVectors, V7HeadRunNeedsNoWindow) {
  const CacheSpec spec = Spec(F | S, 1000, kTierBitHbm, kTierBitHbm, 0);
  std::vector<WorkerBlock> blocks(2, Block({{kTierHbm, F | S}}, 16));
  EXPECT_EQ(Scan(&spec, blocks), 2u);
}

TEST(PrefixScannerVectors, V8MambaOnlyAtTheBoundary) {
  const uint32_t tiers = kTierBitHbm | kTierBitDram;
  const CacheSpec spec = Spec(F | M, 0, tiers, tiers, tiers);
  const auto full = Block({{kTierHbm, F}});
  const auto full_mamba = Block({{kTierHbm, F | M}});
  EXPECT_EQ(Scan(&spec, {full, full, full, full_mamba}), 4u);
  EXPECT_EQ(Scan(&spec, {full, full}), 0u);
}

TEST(PrefixScannerVectors, V9InvalidSpecs) {
  const uint32_t tiers = kTierBitHbm | kTierBitDram;
  const auto block = Block({{kTierHbm, F | S}}, 16);
  const CacheSpec no_components = Spec(0, 100, tiers, tiers, tiers);
  const CacheSpec version2 = Spec(F | S, 100, tiers, tiers, tiers, 2);
  const CacheSpec no_window = Spec(F | S, 0, tiers, tiers, tiers);
  for (const CacheSpec* spec : {&no_components, &version2, &no_window}) {
    PrefixScanner scanner(spec);
    EXPECT_EQ(scanner.mode(), PrefixScanner::Mode::kInvalid);
    EXPECT_TRUE(scanner.settled());
    scanner.Push(block);
    EXPECT_EQ(scanner.result(), 0u);
  }
}

TEST(PrefixScannerVectors, V10SpecWithLegacyPlacements) {
  const CacheSpec spec = Spec(F | S, 100, kTierBitHbm, kTierBitHbm, 0);
  const auto legacy = Block({{kTierHbm, 0}}, 16);
  EXPECT_EQ(Scan(&spec, {legacy, legacy}), 0u);
}

TEST(PrefixScanner, ModeSelection) {
  const CacheSpec v0 = Spec(F, 0, kTierBitHbm, 0, 0, /*version=*/0);
  EXPECT_EQ(PrefixScanner(nullptr).mode(), PrefixScanner::Mode::kLegacy);
  EXPECT_EQ(PrefixScanner(&v0).mode(), PrefixScanner::Mode::kComponentAware);
  const CacheSpec mamba_no_window = Spec(F | M, 0, kTierBitHbm, 0, kTierBitHbm);
  EXPECT_EQ(PrefixScanner(&mamba_no_window).mode(),
            PrefixScanner::Mode::kComponentAware);
}

TEST(PrefixScanner, LegacyPresenceIgnoresTierIncludingSsd) {
  EXPECT_EQ(Scan(nullptr, {Block({{kTierSsd, 0}}), Block({{kTierDram, 0}})}),
            2u);
}

TEST(PrefixScanner, LegacyFailsClosedOnMaskAfterGap) {
  const auto held = Block({{kTierHbm, 0}});
  EXPECT_EQ(Scan(nullptr, {held, held, Absent(), Block({{kTierSsd, F}})}), 0u);
  // A masked placement next to a legacy one on the same block fails too.
  EXPECT_EQ(Scan(nullptr, {Block({{kTierHbm, 0}, {kTierDram, S}})}), 0u);
}

TEST(PrefixScanner, LegacySettlesOnlyWhenFailedClosed) {
  PrefixScanner scanner(nullptr);
  scanner.Push(Block({{kTierHbm, 0}}));
  scanner.Push(Absent());
  EXPECT_FALSE(scanner.settled());  // a later mask could still fail it
  EXPECT_EQ(scanner.result(), 1u);
  scanner.Push(Block({{kTierHbm, M}}));
  EXPECT_TRUE(scanner.settled());
  EXPECT_EQ(scanner.result(), 0u);
}

TEST(PrefixScanner, FullAlwaysRequiredEvenWhenNotDeclared) {
  const uint32_t tiers = kTierBitHbm | kTierBitDram;
  const CacheSpec spec = Spec(S, 10, tiers, tiers, tiers);
  EXPECT_EQ(Scan(&spec, {Block({{kTierHbm, S}}, 16)}), 0u);
  EXPECT_EQ(Scan(&spec, {Block({{kTierHbm, F | S}}, 16)}), 1u);
}

TEST(PrefixScanner, ComponentsMaySitOnDifferentTiers) {
  const uint32_t tiers = kTierBitHbm | kTierBitDram;
  const CacheSpec spec = Spec(F | S | M, 10, tiers, tiers, tiers);
  EXPECT_EQ(Scan(&spec, {Block({{kTierHbm, F}, {kTierDram, S | M}}, 16)}), 1u);
}

TEST(PrefixScanner, SpecTierMaskLimitsEachComponent) {
  // FULL only from DRAM: an HBM copy does not count.
  const CacheSpec dram_only = Spec(F, 0, kTierBitDram, 0, 0);
  EXPECT_EQ(Scan(&dram_only, {Block({{kTierHbm, F}})}), 0u);
  EXPECT_EQ(Scan(&dram_only, {Block({{kTierDram, F}})}), 1u);
  // A spec that declares only SSD for FULL never serves anything.
  const CacheSpec ssd_only = Spec(F, 0, kTierBitSsd, 0, 0);
  EXPECT_EQ(Scan(&ssd_only, {Block({{kTierSsd, F}}), Block({{kTierHbm, F}})}),
            0u);
  // MAMBA declared at SSD only: never available, so no boundary.
  const CacheSpec mamba_ssd = Spec(F | M, 0, kTierBitHbm, 0, kTierBitSsd);
  EXPECT_EQ(Scan(&mamba_ssd, {Block({{kTierHbm, F | M}, {kTierSsd, M}})}), 0u);
}

TEST(PrefixScanner, SwaRunAfterHoleMustReachWindow) {
  const CacheSpec spec = Spec(F | S, 100, kTierBitHbm, kTierBitHbm, 0);
  const auto fs = Block({{kTierHbm, F | S}}, 60);
  const auto f = Block({{kTierHbm, F}}, 60);
  // Hole at block 1; run of 60 at block 2 is short; 120 at block 3 is enough.
  EXPECT_EQ(Scan(&spec, {fs, f, fs}), 1u);
  EXPECT_EQ(Scan(&spec, {fs, f, fs, fs}), 4u);
  // Unknown sizes add nothing.
  const auto fs_unknown = Block({{kTierHbm, F | S}}, 0);
  EXPECT_EQ(Scan(&spec, {fs, f, fs_unknown, fs_unknown, fs_unknown}), 1u);
}

TEST(PrefixScanner, BestFreezesWhenFullBreaks) {
  const CacheSpec spec = Spec(F, 0, kTierBitHbm, 0, 0);
  PrefixScanner scanner(&spec);
  scanner.Push(Block({{kTierHbm, F}}));
  EXPECT_FALSE(scanner.settled());
  scanner.Push(Absent());
  EXPECT_TRUE(scanner.settled());
  scanner.Push(Block({{kTierHbm, F}}));
  EXPECT_EQ(scanner.result(), 1u);
}

// A random worker view: absent, or up to three (tier, mask) pairs with tiers
// 1..3 plus an out-of-range tier now and then.
WorkerBlock RandomBlock(std::mt19937& rng) {
  WorkerBlock block;
  if (rng() % 4 == 0) return block;
  const uint32_t pairs = 1 + rng() % 3;
  for (uint32_t i = 0; i < pairs; ++i) {
    const uint32_t tier = rng() % 16 == 0 ? 7 : 1 + rng() % 3;
    block.Add(tier, rng() % 3 == 0 ? 0 : rng() % 8);
  }
  return block;
}

// Specs of every kind, for the randomised tests: each picks one of these or
// none (a legacy worker) by a number in 0..7.
std::vector<CacheSpec> VariedSpecs() {
  return {
      Spec(F, 0, kTierBitHbm | kTierBitDram, 0, 0),
      Spec(F | S, 100, kTierBitHbm | kTierBitDram, kTierBitHbm, 0),
      Spec(F | S, 40, kTierBitHbm, kTierBitHbm | kTierBitDram, 0),
      Spec(F | M, 0, kTierBitHbm | kTierBitDram, 0, kTierBitDram),
      Spec(F | S | M, 64, kTierBitHbm | kTierBitDram, kTierBitDram,
           kTierBitHbm | kTierBitSsd),
      Spec(S, 16, kTierBitHbm, kTierBitHbm, 0, 0),
      Spec(0, 0, kTierBitHbm, 0, 0),
  };
}

TEST(PrefixScanner, PushRunEqualsPushingEachBlock) {
  const std::vector<CacheSpec> specs = VariedSpecs();
  for (uint32_t seed = 1; seed <= 400; ++seed) {
    std::mt19937 rng(seed);
    const int which = static_cast<int>(rng() % 8);
    const CacheSpec* spec = which == 7 ? nullptr : &specs[which];
    PrefixScanner each(spec);
    PrefixScanner runs(spec);
    const uint32_t run_count = 1 + rng() % 8;
    for (uint32_t r = 0; r < run_count; ++r) {
      const WorkerBlock view = RandomBlock(rng);
      const uint32_t length = 1 + rng() % 6;
      uint64_t tokens = 0;
      for (uint32_t b = 0; b < length; ++b) {
        WorkerBlock one = view;
        one.token_count = rng() % 4 == 0 ? 0 : rng() % 48;
        tokens += one.token_count;
        each.Push(one);
      }
      runs.PushRun(view, length, tokens);
      ASSERT_EQ(runs.result(), each.result()) << "seed " << seed;
      ASSERT_EQ(runs.settled(), each.settled()) << "seed " << seed;
    }
  }
}

// A view and its placements, so that a test can compute its class.
struct Placed {
  WorkerBlock block;
  std::vector<std::pair<uint32_t, uint32_t>> pairs;  // (tier, mask)
};

Placed RandomPlaced(std::mt19937& rng) {
  Placed out;
  if (rng() % 4 != 0) {
    const uint32_t pairs = 1 + rng() % 3;
    for (uint32_t i = 0; i < pairs; ++i) {
      const uint32_t tier = rng() % 16 == 0 ? 7 : 1 + rng() % 3;
      // Now and then a bit above the three components, which only the
      // legacy rule reads.
      const uint32_t mask =
          (rng() % 3 == 0 ? 0 : rng() % 8) | (rng() % 10 == 0 ? 0x100u : 0u);
      out.block.Add(tier, mask);
      out.pairs.emplace_back(tier, mask);
    }
  }
  out.block.token_count = rng() % 4 == 0 ? 0 : 1 + rng() % 64;
  return out;
}

uint8_t ClassOf(const PrefixScanner& scanner, const Placed& placed) {
  uint8_t c = 0;
  for (const auto& [tier, mask] : placed.pairs) {
    c |= scanner.Contribution(tier, mask);
  }
  return c;
}

// PrefixQuery merges blocks of one class into one run; that must give what
// pushing each block gives, whatever the spec.
TEST(PrefixScanner, BlocksOfOneClassAreInterchangeable) {
  const std::vector<CacheSpec> specs = VariedSpecs();
  int merged = 0;
  for (uint32_t seed = 1; seed <= 3000; ++seed) {
    std::mt19937 rng(seed);
    const int which = static_cast<int>(rng() % 8);
    const CacheSpec* spec = which == 7 ? nullptr : &specs[which];
    std::vector<Placed> blocks(1 + rng() % 12);
    for (Placed& b : blocks) b = RandomPlaced(rng);

    PrefixScanner each(spec);
    PrefixScanner runs(spec);
    size_t i = 0;
    while (i < blocks.size()) {
      const uint8_t cls = ClassOf(runs, blocks[i]);
      size_t j = i + 1;
      uint64_t tokens = blocks[i].block.token_count;
      each.Push(blocks[i].block);
      // The first block of a class run is pushed alone, as PrefixQuery does.
      runs.PushRun(blocks[i].block, 1, tokens);
      ASSERT_EQ(runs.settled(), each.settled()) << "seed " << seed;
      tokens = 0;
      while (j < blocks.size() && ClassOf(runs, blocks[j]) == cls) {
        each.Push(blocks[j].block);
        tokens += blocks[j].block.token_count;
        ++j;
      }
      if (j > i + 1) {
        runs.PushRun(blocks[i].block, static_cast<uint32_t>(j - i - 1), tokens);
        ++merged;
      }
      ASSERT_EQ(runs.result(), each.result()) << "seed " << seed;
      ASSERT_EQ(runs.settled(), each.settled()) << "seed " << seed;
      i = j;
    }
  }
  EXPECT_GT(merged, 1000);  // the property was exercised
}

// The classes themselves: what each mode keeps of a placement.
TEST(PrefixScanner, ContributionKeepsOnlyWhatTheRulesRead) {
  const PrefixScanner legacy(nullptr);
  EXPECT_EQ(legacy.Contribution(kTierHbm, 0), legacy.Contribution(7, 0));
  EXPECT_NE(legacy.Contribution(kTierHbm, 0), legacy.Contribution(kTierHbm, F));
  EXPECT_EQ(legacy.Contribution(kTierHbm, F), legacy.Contribution(kTierSsd, S));
  EXPECT_EQ(legacy.Contribution(kTierHbm, 0x100),
            legacy.Contribution(kTierHbm, F));

  const CacheSpec fs =
      Spec(F | S, 100, kTierBitHbm | kTierBitDram, kTierBitHbm, 0);
  const PrefixScanner aware(&fs);
  // HBM and DRAM both serve FULL: the same class for a FULL-only placement.
  EXPECT_EQ(aware.Contribution(kTierHbm, F), aware.Contribution(kTierDram, F));
  // Only HBM serves SWA.
  EXPECT_NE(aware.Contribution(kTierHbm, F | S),
            aware.Contribution(kTierDram, F | S));
  // SSD serves nothing; MAMBA is not in the spec.
  EXPECT_EQ(aware.Contribution(kTierSsd, F | S), 0);
  EXPECT_EQ(aware.Contribution(kTierHbm, F | M),
            aware.Contribution(kTierHbm, F));

  const CacheSpec invalid = Spec(0, 0, kTierBitHbm, 0, 0);
  EXPECT_EQ(PrefixScanner(&invalid).Contribution(kTierHbm, F), 0);
}

TEST(PrefixScanner, RunAfterSwaHoleCountsEveryTokenOfTheRun) {
  const CacheSpec spec = Spec(F | S, 100, kTierBitHbm, kTierBitHbm, 0);
  PrefixScanner scanner(&spec);
  scanner.Push(Block({{kTierHbm, F | S}}, 50));
  scanner.Push(Block({{kTierHbm, F}}, 50));  // SWA hole
  scanner.PushRun(Block({{kTierHbm, F | S}}), 3, 90);
  EXPECT_EQ(scanner.result(), 1u);  // 90 tokens after the hole: short
  scanner.PushRun(Block({{kTierHbm, F | S}}), 1, 10);
  EXPECT_EQ(scanner.result(), 6u);
}

}  // namespace
}  // namespace prefix_scanner_test
}  // namespace kvindexer
