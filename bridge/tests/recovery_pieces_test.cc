// The pure pieces of the recovery cycle (docs/bridge-events.md, "Recovery >
// Primitives" and "Recovery > Watermarks"): FOLD, the request builders and
// the classification of live batches.
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bridge/recovery_fold.h"
#include "bridge/recovery_requests.h"
#include "bridge/stream_watermarks.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/msgpack_builders.h"

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

ApplyHeader Header() {
  return {"w", "http://w:1", std::nullopt, std::nullopt, ""};
}

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

// A snapshot-v1 installs every hash at HBM, legacy.
TEST(RecoveryRequests, SnapshotV1PlacementIsAllAtHbm) {
  auto placement = SnapshotPlacement(std::vector<int64_t>{4, 5});
  ASSERT_EQ(placement.size(), 1u);
  EXPECT_EQ(placement[0].tier(), kv_indexer::v1::TIER_HBM);
  EXPECT_THAT(Hashes(placement[0]), ElementsAre(4, 5));
  EXPECT_THAT(placement[0].component_masks(), IsEmpty());
}

// A snapshot-v2 installs per tier: legacy entries without a configured
// cache spec, masks and sizes with one; a repeated (hash, tier) once.
TEST(RecoveryRequests, SnapshotV2PlacementPerTier) {
  const std::vector<SnapshotBlock> blocks = {
      {1, Tier::kSsd, 1, 16},  {2, Tier::kHbm, 3, 16}, {1, Tier::kHbm, 1, 16},
      {3, Tier::kDram, 4, 32}, {2, Tier::kHbm, 7, 8},
  };
  auto legacy = SnapshotV2Placement(blocks, /*with_components=*/false);
  ASSERT_EQ(legacy.size(), 3u);
  EXPECT_EQ(legacy[0].tier(), kv_indexer::v1::TIER_HBM);
  EXPECT_THAT(Hashes(legacy[0]), ElementsAre(2, 1));
  EXPECT_EQ(legacy[1].tier(), kv_indexer::v1::TIER_DRAM);
  EXPECT_THAT(Hashes(legacy[1]), ElementsAre(3));
  EXPECT_EQ(legacy[2].tier(), kv_indexer::v1::TIER_SSD);
  EXPECT_THAT(Hashes(legacy[2]), ElementsAre(1));
  for (const auto& entry : legacy) {
    EXPECT_THAT(entry.component_masks(), IsEmpty());
    EXPECT_THAT(entry.block_sizes(), IsEmpty());
  }

  auto spec = SnapshotV2Placement(blocks, /*with_components=*/true);
  ASSERT_EQ(spec.size(), 3u);
  EXPECT_THAT(Hashes(spec[0]), ElementsAre(2, 1));
  EXPECT_THAT(spec[0].component_masks(), ElementsAre(7, 1));
  EXPECT_THAT(spec[0].block_sizes(), ElementsAre(8, 16));
  EXPECT_THAT(spec[1].component_masks(), ElementsAre(4));
  EXPECT_THAT(spec[1].block_sizes(), ElementsAre(32));
  EXPECT_THAT(SnapshotV2Placement({}, true), IsEmpty());
}

// The install criterion, differentially: for random HiCache event streams
// (stores and removes at GPU, CPU_PINNED, DISK and EXTERNAL, clears), the
// placement of the snapshot-v2 that SGLang's (hash, tier) mirror would send
// equals FOLD of the same batches from seq 0, for a legacy worker
// (unlabelled stores, no cache spec) and a component worker (labelled
// stores, a cache spec). The mirror here is a plain model, independent of
// the fold and of the fake publisher's.
TEST(RecoveryRequests, SnapshotV2PlacementEqualsTheFoldOfTheLiveStream) {
  const char* const kMediums[] = {"GPU", "CPU_PINNED", "DISK", "EXTERNAL"};
  const std::vector<std::vector<std::string>> kLabelSets = {
      {"full"}, {"full", "swa"}, {"mamba"}, {"swa"}};
  for (const bool components : {false, true}) {
    for (uint32_t seed = 1; seed <= 200; ++seed) {
      std::mt19937 rng(seed);
      std::vector<LiveBatch> batches;
      std::vector<SnapshotBlock> mirror;  // SGLang's v2 mirror, in order
      auto find = [&mirror](int64_t hash, Tier tier) {
        for (size_t i = 0; i < mirror.size(); ++i) {
          if (mirror[i].hash == hash && mirror[i].tier == tier) return i;
        }
        return mirror.size();
      };
      for (uint64_t seq = 0; seq < 12; ++seq) {
        testing::MpArray events;
        for (int e = 0; e < 4; ++e) {
          const uint32_t roll = rng() % 20;
          if (roll == 0) {
            events.push_back(ClearEvent());
            mirror.clear();
            continue;
          }
          const std::string medium = kMediums[rng() % 4];
          std::vector<int64_t> hashes;
          for (uint32_t n = 1 + rng() % 3; n > 0; --n) {
            hashes.push_back(static_cast<int64_t>(rng() % 12));
          }
          std::optional<Tier> tier;
          if (medium == "GPU") tier = Tier::kHbm;
          if (medium == "CPU_PINNED") tier = Tier::kDram;
          if (medium == "DISK") tier = Tier::kSsd;
          if (roll < 8) {
            events.push_back(RemoveEvent(hashes, medium));
            for (int64_t h : hashes) {
              if (tier && find(h, *tier) < mirror.size()) {
                mirror.erase(mirror.begin() +
                             static_cast<std::ptrdiff_t>(find(h, *tier)));
              }
            }
            continue;
          }
          const int64_t block_size = 1 + rng() % 3;
          const std::vector<std::string>& labels =
              kLabelSets[rng() % kLabelSets.size()];
          uint32_t mask = 0;
          for (const std::string& l : labels) {
            mask |= l == "full" ? 1u : l == "swa" ? 2u : 4u;
          }
          events.push_back(
              StoreEvent(hashes, medium, block_size,
                         components ? std::optional<testing::Mp>(Labels(labels))
                                    : std::nullopt));
          if (!tier) continue;
          for (int64_t h : hashes) {
            const SnapshotBlock block{h, *tier, mask,
                                      static_cast<uint32_t>(block_size)};
            const size_t at = find(h, *tier);
            if (at < mirror.size()) {
              mirror[at] = block;
            } else {
              mirror.push_back(block);
            }
          }
        }
        batches.push_back({seq, "", PackBatch(std::move(events))});
      }
      const auto folded =
          FoldBatches(batches, kAllTiers).placement.ToTierHashes();
      const auto installed = SnapshotV2Placement(mirror, components);
      ASSERT_EQ(installed.size(), folded.size())
          << "seed " << seed << " components " << components;
      for (size_t t = 0; t < folded.size(); ++t) {
        EXPECT_EQ(installed[t].SerializeAsString(),
                  folded[t].SerializeAsString())
            << "seed " << seed << " components " << components << " tier "
            << folded[t].tier() << "\ninstalled " << installed[t].DebugString()
            << "folded " << folded[t].DebugString();
      }
    }
  }
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
