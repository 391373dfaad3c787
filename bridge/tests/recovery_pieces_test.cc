// The pure pieces of the recovery cycle (docs/bridge-events.md, "Recovery >
// Primitives" and "Recovery > Watermarks"): FOLD, the request builders and
// the classification of live batches.
#include <string>
#include <vector>

#include "bridge/recovery_fold.h"
#include "bridge/recovery_requests.h"
#include "bridge/stream_watermarks.h"
#include "bridge/tests/msgpack_builders.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace {

using testing::ClearEvent;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::Labels;
using testing::PackBatch;
using testing::RemoveEvent;
using testing::StoreEvent;

constexpr Tier kAllTiers[] = {Tier::kHbm, Tier::kDram, Tier::kSsd};

std::vector<int64_t> Hashes(const kv_indexer::v1::TierHashes& entry) {
  return {entry.hashes().begin(), entry.hashes().end()};
}

TEST(RecoveryFold, StoresRemovesAndClearsInOrder) {
  std::vector<LiveBatch> batches = {
      {0, "", PackBatch({StoreEvent({1, 2}, "GPU"), StoreEvent({3}, "DISK")})},
      {1, "", PackBatch({RemoveEvent({1}, "GPU"), StoreEvent({4}, "GPU")})},
      {2, "", PackBatch({StoreEvent({1}, "CPU_PINNED")})},
  };
  FoldResult fold = FoldBatches(batches, kAllTiers);
  EXPECT_THAT(fold.undecodable, IsEmpty());
  auto tiers = fold.placement.ToTierHashes();
  ASSERT_EQ(tiers.size(), 3u);
  EXPECT_EQ(tiers[0].tier(), kv_indexer::v1::TIER_HBM);
  EXPECT_THAT(Hashes(tiers[0]), ElementsAre(2, 4));
  EXPECT_THAT(tiers[0].component_masks(), IsEmpty());
  EXPECT_THAT(Hashes(tiers[1]), ElementsAre(1));
  EXPECT_THAT(Hashes(tiers[2]), ElementsAre(3));

  batches.push_back({3, "", PackBatch({ClearEvent(), StoreEvent({9}, "GPU")})});
  tiers = FoldBatches(batches, kAllTiers).placement.ToTierHashes();
  ASSERT_EQ(tiers.size(), 1u);
  EXPECT_THAT(Hashes(tiers[0]), ElementsAre(9));
}

TEST(RecoveryFold, ClearTiersAreTheConfiguredOnes) {
  std::vector<LiveBatch> batches = {
      {0, "",
       PackBatch(
           {StoreEvent({1}, "GPU"), StoreEvent({2}, "DISK"), ClearEvent()})}};
  const Tier hbm_only[] = {Tier::kHbm};
  auto tiers = FoldBatches(batches, hbm_only).placement.ToTierHashes();
  ASSERT_EQ(tiers.size(), 1u);
  EXPECT_EQ(tiers[0].tier(), kv_indexer::v1::TIER_SSD);
}

TEST(RecoveryFold, ComponentMasksAndSizesKept) {
  std::vector<LiveBatch> batches = {
      {0, "",
       PackBatch({StoreEvent({1}, "GPU", 16, Labels({"full", "swa"})),
                  StoreEvent({2}, "GPU")})},
      // A legacy re-report of 1 sets its mask to 0 and keeps its size.
      {1, "", PackBatch({StoreEvent({1}, "GPU")})},
  };
  auto tiers = FoldBatches(batches, kAllTiers).placement.ToTierHashes();
  ASSERT_EQ(tiers.size(), 1u);
  EXPECT_THAT(Hashes(tiers[0]), ElementsAre(1, 2));
  EXPECT_THAT(tiers[0].component_masks(), ElementsAre(0u, 0u));
  EXPECT_THAT(tiers[0].block_sizes(), ElementsAre(16u, 0u));
}

TEST(RecoveryFold, UndecodableBatchesAreListed) {
  std::vector<LiveBatch> batches = {
      {0, "", "\xc1"}, {1, "", PackBatch({StoreEvent({5}, "GPU")})}};
  FoldResult fold = FoldBatches(batches, kAllTiers);
  EXPECT_THAT(fold.undecodable, ElementsAre(0u));
  EXPECT_EQ(fold.placement.size(), 1u);
}

ApplyHeader Header() { return {"w", "http://w:1", std::nullopt}; }

TEST(RecoveryRequests, ProbeAndRegistration) {
  auto probe = ProbeRequest(Header(), "e1");
  EXPECT_TRUE(probe.enforce_sequence());
  EXPECT_EQ(probe.seq(), 0u);
  EXPECT_EQ(probe.worker_epoch(), "e1");
  EXPECT_EQ(probe.actions_size(), 0);
  auto reg = RegistrationRequest(Header());
  EXPECT_FALSE(reg.enforce_sequence());
  EXPECT_EQ(reg.actions_size(), 0);
  EXPECT_EQ(reg.worker_address(), "http://w:1");
}

TEST(RecoveryRequests, SendGatesOnlyTheLastChunk) {
  ActionList actions;
  KvAction report;
  report.hash_count = 40'000;
  for (int64_t h = 0; h < 40'000; ++h) {
    actions.hashes.push_back(h);
    actions.masks.push_back(0);
    actions.sizes.push_back(0);
  }
  actions.actions.push_back(report);
  auto gated = SendRequests(actions, Header(), 7, std::string("e"));
  ASSERT_EQ(gated.size(), 3u);
  EXPECT_FALSE(gated[0].enforce_sequence());
  EXPECT_FALSE(gated[1].enforce_sequence());
  EXPECT_TRUE(gated[2].enforce_sequence());
  EXPECT_EQ(gated[2].worker_epoch(), "e");
  for (const auto& r : gated) EXPECT_EQ(r.seq(), 7u);
  EXPECT_EQ(SendRequests(actions, Header(), 7, std::nullopt).size(), 3u);

  ActionList empty;
  auto none = SendRequests(empty, Header(), 8, std::string(""));
  ASSERT_EQ(none.size(), 1u);
  EXPECT_TRUE(none[0].enforce_sequence());
  EXPECT_EQ(none[0].seq(), 8u);
  EXPECT_THAT(SendRequests(empty, Header(), 8, std::nullopt), IsEmpty());
}

TEST(RecoveryRequests, InstallTruncatesToTheLimit) {
  std::vector<int64_t> hashes;
  for (int64_t h = 1; h <= 10'000; ++h) hashes.push_back(h);
  auto placement = SnapshotPlacement(hashes);
  InstallRequest whole = BuildInstallRequest(Header(), "e", 3, placement);
  EXPECT_FALSE(whole.truncated());
  EXPECT_EQ(whole.request.hashes_by_tier(0).hashes_size(), 10'000);
  EXPECT_EQ(whole.request.applied_seq(), 3u);

  InstallRequest cut = BuildInstallRequest(Header(), "e", 3, placement, 8192);
  EXPECT_TRUE(cut.truncated());
  EXPECT_LE(cut.request.ByteSizeLong(), 8192u);
  EXPECT_GT(cut.request.ByteSizeLong(), 8192u - 64);
  EXPECT_EQ(cut.request.hashes_by_tier(0).hashes(0), 1);
  EXPECT_EQ(static_cast<size_t>(cut.request.hashes_by_tier(0).hashes_size()),
            cut.hashes_sent);
}

TEST(RecoveryRequests, LegacyInstallClearsThenReports) {
  auto placement = SnapshotPlacement(std::vector<int64_t>{4, 5});
  auto requests = LegacyInstallRequests(Header(), 9, kAllTiers, placement);
  ASSERT_EQ(requests.size(), 1u);
  ASSERT_EQ(requests[0].actions_size(), 4);
  EXPECT_EQ(requests[0].actions(0).type(),
            kv_indexer::v1::ACTION_CLEAR_ALL_AT_TIER);
  EXPECT_EQ(requests[0].actions(3).type(), kv_indexer::v1::ACTION_REPORT);
  EXPECT_FALSE(requests[0].enforce_sequence());
}

LiveBatch B(uint64_t seq, std::string payload = "p") {
  return {seq, "", std::move(payload)};
}

TEST(StreamWatermarks, ClassifiesAgainstAppliedAndFloor) {
  StreamWatermarks w;
  EXPECT_EQ(w.Classify(B(5), ""), LiveVerdict::kUntracked);
  w.Reset(10, "", false);
  EXPECT_EQ(w.Classify(B(11), ""), LiveVerdict::kNext);
  EXPECT_EQ(w.Classify(B(13), ""), LiveVerdict::kGap);
  EXPECT_EQ(w.Classify(B(9), ""), LiveVerdict::kOverlap);
  w.MarkLive(11);
  w.SetApplied(11);
  EXPECT_EQ(w.Classify(B(11), ""), LiveVerdict::kRestart);
  EXPECT_EQ(w.Classify(B(0), ""), LiveVerdict::kRestart);
}

TEST(StreamWatermarks, ReplayDigestsSeparateOverlapFromRestart) {
  StreamWatermarks w;
  std::vector<LiveBatch> replayed = {B(4, "a"), B(5, "b"), B(6, "c")};
  w.Reset(6, "", false, replayed);
  EXPECT_EQ(w.Classify(B(5, "b"), ""), LiveVerdict::kOverlap);
  EXPECT_EQ(w.Classify(B(5, "x"), ""), LiveVerdict::kRestart);
  EXPECT_EQ(w.Classify(B(2, "b"), ""), LiveVerdict::kRestart);
  w.MarkLive(7);
  EXPECT_EQ(w.Classify(B(5, "b"), ""), LiveVerdict::kRestart);
}

TEST(StreamWatermarks, EpochFencing) {
  StreamWatermarks w;
  w.Reset(3, "e1", true);
  EXPECT_EQ(w.Classify(B(4), "e1"), LiveVerdict::kNext);
  EXPECT_EQ(w.Classify(B(4), "e2"), LiveVerdict::kRestart);
  EXPECT_EQ(w.Classify(B(2), "e1"), LiveVerdict::kOverlap);
  w.MarkLive(4);
  w.SetApplied(4);
  EXPECT_EQ(w.Classify(B(4), "e1"), LiveVerdict::kStale);
}

}  // namespace
}  // namespace kvindexer::bridge
