#include "core/worker_batches.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/requests.h"

namespace kvindexer {
namespace {

using test_support::Range;
using test_support::Snapshot;
using test_support::Spec;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

std::string Str(StringView v) { return std::string(v.data, v.size); }
std::vector<int64_t> Vec(HashSpan s) {
  return std::vector<int64_t>(s.data, s.data + s.size);
}
std::vector<uint32_t> Vec(U32Span s) {
  return std::vector<uint32_t>(s.data, s.data + s.size);
}

void ExpectClearsFirst(const ApplyBatchView& view) {
  ASSERT_GE(view.action_count, 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(view.actions[i].type, kActionClearAllAtTier);
    EXPECT_EQ(view.actions[i].tier, kTierHbm + i);
    EXPECT_EQ(view.actions[i].hashes.size, 0u);
  }
}

TEST(RecordBatch, PassesTheStoredAddressAndSpec) {
  WorkerRecord record;
  record.address = "http://w:1";
  record.spec = CacheSpec{1, kComponentFull, 0, kTierBitHbm, 0, 0};
  const RecordBatch clear("w", record, RecordBatch::Actions::kClearAllTiers);
  EXPECT_EQ(Str(clear.view().worker_id), "w");
  EXPECT_EQ(Str(clear.view().worker_address), "http://w:1");
  EXPECT_EQ(clear.view().has_cache_spec, 1u);
  EXPECT_EQ(clear.view().cache_spec.full_tier_mask, kTierBitHbm);
  EXPECT_EQ(clear.view().action_count, 3u);
  ExpectClearsFirst(clear.view());

  record.spec.reset();
  const RecordBatch refresh("w", record, RecordBatch::Actions::kNone);
  EXPECT_EQ(refresh.view().has_cache_spec, 0u);
  EXPECT_EQ(refresh.view().action_count, 0u);
}

TEST(SnapshotBatch, EmptySnapshotIsThreeClears) {
  const Snapshot snapshot = Snapshot("w", "a").Tier(kTierDram, {});
  const SnapshotBatch batch(snapshot, "w");
  EXPECT_EQ(batch.view().action_count, 3u);
  ExpectClearsFirst(batch.view());
  EXPECT_EQ(batch.view().has_cache_spec, 0u);
}

TEST(SnapshotBatch, OneReportPerTierAfterTheClears) {
  const Snapshot snapshot =
      Snapshot("w", "addr")
          .Spec(Spec(kComponentFull, 0, kTierBitHbm))
          .Tier(kTierSsd, {7})
          .Tier(kTierHbm, {1, 2}, {kComponentFull, 0}, {16, 0})
          .Tier(kTierHbm, {3});
  const SnapshotBatch batch(snapshot, "w");
  const ApplyBatchView& view = batch.view();
  EXPECT_EQ(Str(view.worker_address), "addr");
  EXPECT_EQ(view.has_cache_spec, 1u);
  ASSERT_EQ(view.action_count, 5u);
  ExpectClearsFirst(view);
  const ActionView& hbm = view.actions[3];
  EXPECT_EQ(hbm.type, kActionReport);
  EXPECT_EQ(hbm.tier, kTierHbm);
  EXPECT_THAT(Vec(hbm.hashes), ElementsAre(1, 2, 3));
  EXPECT_THAT(Vec(hbm.component_masks), ElementsAre(kComponentFull, 0u, 0u));
  EXPECT_THAT(Vec(hbm.block_sizes), ElementsAre(16u, 0u, 0u));
  const ActionView& ssd = view.actions[4];
  EXPECT_EQ(ssd.tier, kTierSsd);
  EXPECT_THAT(Vec(ssd.hashes), ElementsAre(7));
}

TEST(SnapshotBatch, RepeatsKeepTheLastOccurrencePerTier) {
  const Snapshot snapshot = Snapshot("w")
                                .Tier(kTierHbm, {1, 2, 1}, {1, 2, 3}, {5, 6, 0})
                                .Tier(kTierDram, {1}, {4}, {0})
                                .Tier(kTierHbm, {2}, {7}, {0});
  const SnapshotBatch batch(snapshot, "w");
  const ApplyBatchView& view = batch.view();
  ASSERT_EQ(view.action_count, 5u);
  const ActionView& hbm = view.actions[3];
  EXPECT_THAT(Vec(hbm.hashes), ElementsAre(1, 2));
  EXPECT_THAT(Vec(hbm.component_masks), ElementsAre(3u, 7u));
  // Every counted size of 1 and 2 is 0: the token counts stay as they are.
  EXPECT_THAT(Vec(hbm.block_sizes), ElementsAre(0u, 0u));
  const ActionView& dram = view.actions[4];
  EXPECT_THAT(Vec(dram.hashes), ElementsAre(1));
  EXPECT_THAT(Vec(dram.component_masks), ElementsAre(4u));
}

TEST(SnapshotBatch, AHashAtSeveralTiersCarriesItsLastCountedSize) {
  const Snapshot snapshot = Snapshot("w")
                                .Tier(kTierHbm, {1, 2}, {}, {5, 3})
                                .Tier(kTierDram, {1, 2}, {}, {7, 0})
                                .Tier(kTierHbm, {1}, {}, {9})
                                .Tier(kTierSsd, {1}, {}, {0});
  const SnapshotBatch batch(snapshot, "w");
  const ApplyBatchView& view = batch.view();
  ASSERT_EQ(view.action_count, 6u);
  for (size_t a = 3; a < 6; ++a) {
    const ActionView& report = view.actions[a];
    for (size_t i = 0; i < report.hashes.size; ++i) {
      const uint32_t want = report.hashes.data[i] == 1 ? 9u : 3u;
      EXPECT_EQ(report.block_sizes.data[i], want)
          << "tier " << report.tier << " hash " << report.hashes.data[i];
    }
  }
}

TEST(SnapshotBatch, MoreThanOneApplyOfHashesIsStillOneBatch) {
  const std::vector<int64_t> many = Range(0, 16385);
  const Snapshot snapshot = Snapshot("w").Tier(kTierHbm, many);
  const SnapshotBatch batch(snapshot, "w");
  ASSERT_EQ(batch.view().action_count, 4u);
  EXPECT_THAT(Vec(batch.view().actions[3].hashes), ElementsAreArray(many));
}

}  // namespace
}  // namespace kvindexer
