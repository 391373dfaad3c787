// ImageBackend against the reference model's backend level
// (tests/support/reference_model.h): after the same Apply and RemoveWorker
// calls, ForEachTier yields exactly the model's holdings, with each block's
// token count, in worker id, tier and hash order.
#include "durable/image_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "tests/support/reference_model.h"
#include "tests/support/requests.h"

namespace kvindexer::durable {
namespace {

namespace v1 = ::kv_indexer::v1;
using test_support::Batch;
using test_support::BatchView;
using test_support::ReferenceModel;
using ::testing::HasSubstr;

// (worker, tier, hash) -> (mask, token count).
using Holdings = std::map<std::tuple<std::string, uint32_t, int64_t>,
                          std::pair<uint32_t, uint32_t>>;

struct Exported {
  Holdings holdings;
  size_t parts = 0;
  size_t largest_part = 0;
  bool ordered = true;  // (worker, tier, hash) strictly ascending throughout
};

Exported Export(const ImageBackend& image, size_t max_hashes) {
  Exported out;
  std::tuple<std::string, uint32_t, int64_t> last;
  bool first = true;
  image.ForEachTier(max_hashes, [&](const ImageBackend::TierView& view) {
    ++out.parts;
    out.largest_part = std::max(out.largest_part, view.hashes.size);
    EXPECT_EQ(view.component_masks.size, view.hashes.size);
    EXPECT_EQ(view.block_sizes.size, view.hashes.size);
    for (size_t i = 0; i < view.hashes.size; ++i) {
      std::tuple<std::string, uint32_t, int64_t> key{
          std::string(view.worker_id), view.tier, view.hashes.data[i]};
      if (!first && !(last < key)) out.ordered = false;
      first = false;
      last = key;
      out.holdings[key] = {view.component_masks.data[i],
                           view.block_sizes.data[i]};
    }
  });
  return out;
}

Holdings ModelHoldings(const ReferenceModel& model) {
  Holdings out;
  for (const auto& [hash, block] : model.blocks()) {
    for (const auto& [key, mask] : block.placements) {
      out[{key.first, key.second, hash}] = {mask, block.token_count};
    }
  }
  return out;
}

void Apply(ImageBackend& image, ReferenceModel& model,
           const v1::ApplyExternalKvBatchRequest& req) {
  const BatchView view(req);
  const BackendStatus status = image.Apply(view.view());
  ASSERT_EQ(status.code, BackendCode::kOk) << status.message;
  model.Store(view.view());
}

BackendStats Stats(ImageBackend& image) {
  BackendStats stats{};
  stats.struct_size = sizeof(stats);
  image.GetStats(&stats);
  return stats;
}

TEST(ImageBackendTest, ReportSetsMasksAndTokenCountsThatLastWhileHeld) {
  ImageBackend image;
  ReferenceModel model;
  Apply(image, model, Batch("w1").Report(kTierHbm, {1, 2}, {3, 4}, {16, 0}));
  // Another worker's report with size 0 keeps the count; a second report
  // of the same placement replaces its mask.
  Apply(image, model, Batch("w2").Report(kTierDram, {1}, {5}, {0}));
  Apply(image, model, Batch("w1").Report(kTierHbm, {1}, {7}));
  Holdings expected{{{"w1", kTierHbm, 1}, {7, 16}},
                    {{"w1", kTierHbm, 2}, {4, 0}},
                    {{"w2", kTierDram, 1}, {5, 16}}};
  EXPECT_EQ(Export(image, 0).holdings, expected);
  EXPECT_EQ(ModelHoldings(model), expected);

  // The block goes with its last placement, and its count with it.
  Apply(image, model, Batch("w1").Revoke(kTierHbm, {1}));
  Apply(image, model, Batch("w2").Clear(kTierDram));
  Apply(image, model, Batch("w3").Report(kTierSsd, {1}));
  expected = {{{"w1", kTierHbm, 2}, {4, 0}}, {{"w3", kTierSsd, 1}, {0, 0}}};
  EXPECT_EQ(Export(image, 0).holdings, expected);
  EXPECT_EQ(ModelHoldings(model), expected);
  const BackendStats stats = Stats(image);
  EXPECT_EQ(stats.blocks, 2u);
  EXPECT_EQ(stats.placements, 2u);
  EXPECT_EQ(stats.workers, 3u);
  EXPECT_EQ(stats.hit_counters, 0u);
  EXPECT_GT(stats.memory_bytes, 0u);
}

TEST(ImageBackendTest, RemoveWorkerTakesEveryTierAndTheRecord) {
  ImageBackend image;
  ReferenceModel model;
  Apply(image, model, Batch("w1").Report(kTierHbm, {1, 2}, {}, {8, 8}));
  Apply(image, model, Batch("w1").Report(kTierSsd, {3}));
  Apply(image, model, Batch("w2").Report(kTierHbm, {2}));
  uint32_t existed = 7;
  ASSERT_EQ(image.RemoveWorker(StringView{"w1", 2}, &existed).code,
            BackendCode::kOk);
  EXPECT_EQ(existed, 1u);
  EXPECT_TRUE(model.RemoveWorker("w1"));
  EXPECT_EQ(Export(image, 0).holdings, ModelHoldings(model));
  EXPECT_EQ(Export(image, 0).holdings,
            (Holdings{{{"w2", kTierHbm, 2}, {0, 8}}}));
  EXPECT_EQ(Stats(image).workers, 1u);
  ASSERT_EQ(image.RemoveWorker(StringView{"w1", 2}, &existed).code,
            BackendCode::kOk);
  EXPECT_EQ(existed, 0u);
  EXPECT_EQ(image.RemoveWorker(StringView{"w1", 2}, nullptr).code,
            BackendCode::kOk);
}

TEST(ImageBackendTest, AMalformedBatchIsRefusedWholeAndChangesNothing) {
  ImageBackend image;
  ReferenceModel model;
  Apply(image, model, Batch("w1").Report(kTierHbm, {1}));
  const v1::ApplyExternalKvBatchRequest bad =
      Batch("w1").Revoke(kTierHbm, {1}).Report(0, {2});
  const BatchView view(bad);
  const BackendStatus status = image.Apply(view.view());
  EXPECT_EQ(status.code, BackendCode::kInvalidArgument);
  EXPECT_EQ(Export(image, 0).holdings, ModelHoldings(model));
}

// A merge's image (durable/checkpoint_merge.h): a batch that reaches
// outside its blocks is refused whole and noted; clears and removals are
// noted per worker and tier, whether or not the image holds the worker.
TEST(ImageBackendTest, ARestrictedImageRefusesOtherBlocksAndNotesClears) {
  const absl::flat_hash_set<int64_t> blocks = {1, 2, 3};
  ImageBackend image;
  image.RestrictTo(&blocks);
  ReferenceModel model;
  Apply(image, model,
        Batch("w1").Report(kTierHbm, {1, 2}).Revoke(kTierSsd, {3}));
  EXPECT_FALSE(image.touched_outside());
  const v1::ApplyExternalKvBatchRequest outside =
      Batch("w1").Revoke(kTierHbm, {1}).Report(kTierHbm, {4});
  const BatchView view(outside);
  EXPECT_EQ(image.Apply(view.view()).code, BackendCode::kFailedPrecondition);
  EXPECT_TRUE(image.touched_outside());
  EXPECT_EQ(Export(image, 0).holdings, ModelHoldings(model));

  EXPECT_FALSE(image.Cleared("w1", kTierDram));
  Apply(image, model, Batch("w1").Clear(kTierDram));
  EXPECT_TRUE(image.Cleared("w1", kTierDram));
  EXPECT_FALSE(image.Cleared("w1", kTierHbm));
  EXPECT_FALSE(image.Cleared("w9", kTierHbm));
  ASSERT_EQ(image.RemoveWorker(StringView{"w9", 2}, nullptr).code,
            BackendCode::kOk);
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    EXPECT_TRUE(image.Cleared("w9", tier));
  }
  EXPECT_FALSE(image.Cleared("w1", kTierHbm));
}

TEST(ImageBackendTest, AnswersNoQueries) {
  ImageBackend image;
  const int64_t hash = 1;
  uint64_t count = 0;
  const BackendStatus match =
      image.Match(HashSpan{&hash, 1}, /*count_as_hit=*/false, nullptr);
  EXPECT_EQ(match.code, BackendCode::kInternal);
  EXPECT_THAT(match.message, HasSubstr("answers no queries"));
  EXPECT_EQ(image.PrefixScan(HashSpan{&hash, 1}, nullptr).code,
            BackendCode::kInternal);
  EXPECT_EQ(image.HitCounts(HashSpan{&hash, 1}, &count).code,
            BackendCode::kInternal);
}

TEST(ImageBackendTest, LargeHoldingsAreVisitedInPartsInOrder) {
  ImageBackend image;
  ReferenceModel model;
  std::vector<int64_t> hashes;
  for (int64_t h = 100; h > -100; --h) hashes.push_back(h * 7919);
  Apply(image, model, Batch("b").Report(kTierDram, hashes));
  Apply(image, model, Batch("a").Report(kTierSsd, {5}).Report(kTierHbm, {6}));
  const Exported exported = Export(image, 64);
  EXPECT_TRUE(exported.ordered);
  EXPECT_EQ(exported.parts, 2u + 4u);  // a: two tiers; b: 200 in 64s
  EXPECT_EQ(exported.largest_part, 64u);
  EXPECT_EQ(exported.holdings, ModelHoldings(model));
}

// Size hints only make room: the hint is asked once per worker that
// appears (again after a removal), the maps are larger from the start, and
// what the image holds is what it holds without them.
TEST(ImageBackendTest, SizeHintsMakeRoomAndChangeNothing) {
  ImageBackend hinted;
  ImageBackend plain;
  ReferenceModel model;
  ReferenceModel plain_model;
  std::vector<std::string> asked;
  hinted.ReserveBlocks(4096);
  hinted.SetHoldingSizes([&](std::string_view worker, uint64_t* counts) {
    asked.emplace_back(worker);
    for (uint32_t t = 0; t <= kMaxTier; ++t) EXPECT_EQ(counts[t], 0u);
    counts[kTierHbm] = 2048;
    counts[kTierSsd] = 16;
  });
  const auto both = [&](const v1::ApplyExternalKvBatchRequest& req) {
    Apply(hinted, model, req);
    Apply(plain, plain_model, req);
  };
  both(Batch("a").Report(kTierHbm, {1, 2, 3}));
  both(Batch("b").Report(kTierSsd, {3, 4}));
  both(Batch("a").Revoke(kTierHbm, {2}));
  EXPECT_EQ(asked, (std::vector<std::string>{"a", "b"}));
  EXPECT_GT(Stats(hinted).memory_bytes, Stats(plain).memory_bytes);

  uint32_t existed = 0;
  ASSERT_EQ(hinted.RemoveWorker(StringView{"a", 1}, &existed).code,
            BackendCode::kOk);
  ASSERT_EQ(plain.RemoveWorker(StringView{"a", 1}, &existed).code,
            BackendCode::kOk);
  EXPECT_TRUE(model.RemoveWorker("a"));
  EXPECT_TRUE(plain_model.RemoveWorker("a"));
  both(Batch("a").Report(kTierHbm, {9}));
  EXPECT_EQ(asked, (std::vector<std::string>{"a", "b", "a"}));
  EXPECT_EQ(Export(hinted, 0).holdings, Export(plain, 0).holdings);
  EXPECT_EQ(Export(hinted, 0).holdings, ModelHoldings(model));
}

// Random batches of REPORT (distinct hashes, as the host sends them; masks
// and sizes present or not), REVOKE and CLEAR over a few workers and a small
// hash space, with removals, checked against the model after every step.
TEST(ImageBackendTest, MatchesTheReferenceModelOverRandomBatches) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    const auto pick = [&rng](int n) {
      return static_cast<int>(rng() % static_cast<uint32_t>(n));
    };
    ImageBackend image;
    ReferenceModel model;
    for (int step = 0; step < 300; ++step) {
      const std::string worker = "w" + std::to_string(pick(5));
      if (pick(20) == 0) {
        uint32_t existed = 0;
        ASSERT_EQ(image
                      .RemoveWorker(StringView{worker.data(), worker.size()},
                                    &existed)
                      .code,
                  BackendCode::kOk);
        EXPECT_EQ(existed != 0, model.RemoveWorker(worker));
      } else {
        Batch batch(worker);
        const int actions = pick(4);
        for (int a = 0; a < actions; ++a) {
          const int tier = 1 + pick(3);
          std::vector<int64_t> pool;
          for (int64_t h = -12; h <= 12; ++h) pool.push_back(h);
          std::shuffle(pool.begin(), pool.end(), rng);
          pool.resize(static_cast<size_t>(1 + pick(8)));
          switch (pick(5)) {
            case 0:
            case 1: {
              std::vector<uint32_t> masks;
              std::vector<uint32_t> sizes;
              if (pick(2) == 0) {
                for (size_t i = 0; i < pool.size(); ++i) {
                  masks.push_back(static_cast<uint32_t>(pick(8)));
                }
              }
              if (pick(2) == 0) {
                for (size_t i = 0; i < pool.size(); ++i) {
                  sizes.push_back(
                      pick(3) == 0 ? 0u : static_cast<uint32_t>(pick(64)));
                }
              }
              batch.Report(tier, pool, masks, sizes);
              break;
            }
            case 2:
            case 3:
              batch.Revoke(tier, pool);
              break;
            default:
              batch.Clear(tier);
              break;
          }
        }
        Apply(image, model, batch);
      }
      const Exported exported = Export(image, 1 + static_cast<size_t>(pick(6)));
      ASSERT_TRUE(exported.ordered) << "step " << step;
      ASSERT_EQ(exported.holdings, ModelHoldings(model)) << "step " << step;
      const BackendStats stats = Stats(image);
      ASSERT_EQ(stats.blocks, model.block_count()) << "step " << step;
      ASSERT_EQ(stats.placements, model.placement_count()) << "step " << step;
      ASSERT_EQ(stats.workers, model.worker_count()) << "step " << step;
    }
  }
}

}  // namespace
}  // namespace kvindexer::durable
