// Chunking (docs/bridge-events.md, "Chunking") and the request header (B1,
// B2, B3, B19; "Reference behaviours" there).
#include "bridge/chunker.h"

#include <numeric>
#include <string>
#include <vector>

#include "bridge/tests/action_text.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace {

using ::kvindexer::bridge::testing::DescribeActions;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Actions = std::vector<std::string>;

void AddAction(ActionList* list, ActionType kind, Tier tier,
               std::vector<int64_t> hashes, std::vector<uint32_t> masks = {},
               std::vector<uint32_t> sizes = {}) {
  KvAction a;
  a.kind = kind;
  a.tier = tier;
  a.hash_begin = list->hashes.size();
  a.hash_count = hashes.size();
  a.has_side_arrays = !masks.empty();
  masks.resize(hashes.size(), 0);
  sizes.resize(hashes.size(), 0);
  list->hashes.insert(list->hashes.end(), hashes.begin(), hashes.end());
  list->masks.insert(list->masks.end(), masks.begin(), masks.end());
  list->sizes.insert(list->sizes.end(), sizes.begin(), sizes.end());
  list->actions.push_back(a);
}

std::vector<int64_t> Range(int64_t begin, int64_t end) {
  std::vector<int64_t> out(static_cast<size_t>(end - begin));
  std::iota(out.begin(), out.end(), begin);
  return out;
}

ApplyHeader Header() {
  return ApplyHeader{"worker-1", "127.0.0.1:9000", std::nullopt, std::nullopt,
                     ""};
}

TEST(Chunker, B1HeaderFields) {
  ActionList list;
  AddAction(&list, ActionType::kReport, Tier::kHbm, {1});
  auto requests = ChunkActions(list, Header(), 42);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].worker_id(), "worker-1");
  EXPECT_EQ(requests[0].seq(), 42u);
  EXPECT_EQ(requests[0].worker_address(), "127.0.0.1:9000");
  EXPECT_FALSE(requests[0].has_cache_spec());
  EXPECT_EQ(DescribeActions(requests[0]), (Actions{"REPORT HBM [1]"}));
}

TEST(Chunker, B2OversizedReportSplitsWithAlignedSideArrays) {
  ActionList list;
  std::vector<int64_t> hashes = Range(0, 16385);
  std::vector<uint32_t> masks(16385), sizes(16385);
  std::iota(masks.begin(), masks.end(), 0u);
  std::iota(sizes.begin(), sizes.end(), 1u);
  AddAction(&list, ActionType::kReport, Tier::kHbm, hashes, masks, sizes);
  auto requests = ChunkActions(list, Header(), 42);
  ASSERT_EQ(requests.size(), 2u);
  ASSERT_EQ(requests[0].actions_size(), 1);
  EXPECT_EQ(requests[0].actions(0).hashes_size(), 16384);
  EXPECT_EQ(requests[0].actions(0).component_masks_size(), 16384);
  EXPECT_EQ(requests[0].actions(0).block_sizes_size(), 16384);
  EXPECT_EQ(requests[0].actions(0).hashes(16383), 16383);
  EXPECT_EQ(requests[0].actions(0).block_sizes(16383), 16384u);
  EXPECT_EQ(DescribeActions(requests[1]),
            (Actions{"REPORT HBM [16384] masks=[16384] sizes=[16385]"}));
  EXPECT_EQ(requests[0].seq(), 42u);
  EXPECT_EQ(requests[1].seq(), 42u);
}

TEST(Chunker, B3ActionLimit) {
  ActionList list;
  for (int i = 0; i < 257; ++i) {
    AddAction(&list, ActionType::kClearAllAtTier,
              i % 2 == 0 ? Tier::kHbm : Tier::kDram, {});
  }
  auto requests = ChunkActions(list, Header(), 7);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].actions_size(), 256);
  EXPECT_EQ(DescribeActions(requests[1]), (Actions{"CLEAR HBM"}));
  EXPECT_EQ(requests[1].actions(0).hashes_size(), 0);
}

TEST(Chunker, B19CacheSpecForwardedUnchangedOnEveryChunk) {
  ApplyHeader header = Header();
  kv_indexer::v1::WorkerCacheSpec spec;
  spec.set_version(1);
  spec.set_components(3);
  spec.set_swa_window_tokens(4096);
  spec.set_full_tier_mask(0x2);
  spec.set_swa_tier_mask(0x6);
  spec.set_mamba_tier_mask(0x6);
  header.cache_spec = spec;
  ActionList list;
  AddAction(&list, ActionType::kRevoke, Tier::kHbm, Range(0, 20000));
  auto requests = ChunkActions(list, header, 9);
  ASSERT_EQ(requests.size(), 2u);
  for (const auto& r : requests) {
    ASSERT_TRUE(r.has_cache_spec());
    EXPECT_EQ(r.cache_spec().SerializeAsString(), spec.SerializeAsString());
    EXPECT_EQ(r.worker_id(), "worker-1");
    EXPECT_EQ(r.worker_address(), "127.0.0.1:9000");
    EXPECT_EQ(r.seq(), 9u);
  }
  // A spec with every field zero is still present.
  header.cache_spec = kv_indexer::v1::WorkerCacheSpec();
  EXPECT_TRUE(ChunkActions(list, header, 9)[0].has_cache_spec());
}

TEST(Chunker, NoActionsNoRequests) {
  EXPECT_THAT(ChunkActions(ActionList{}, Header(), 1), IsEmpty());
}

TEST(Chunker, GreedyPackingByHashTotal) {
  ActionList list;
  AddAction(&list, ActionType::kReport, Tier::kHbm, Range(0, 10000));
  AddAction(&list, ActionType::kRevoke, Tier::kHbm, Range(10000, 16384));
  AddAction(&list, ActionType::kClearAllAtTier, Tier::kSsd, {});
  AddAction(&list, ActionType::kReport, Tier::kDram, Range(0, 1));
  auto requests = ChunkActions(list, Header(), 1);
  ASSERT_EQ(requests.size(), 2u);
  // 10000 + 6384 = 16384 exactly fits; the clear (0 hashes) still fits.
  EXPECT_EQ(requests[0].actions_size(), 3);
  EXPECT_EQ(requests[1].actions_size(), 1);
  EXPECT_EQ(DescribeActions(requests[1]), (Actions{"REPORT DRAM [0]"}));
}

TEST(Chunker, LargeActionSlicesThenPacksFollowingActions) {
  ActionList list;
  AddAction(&list, ActionType::kReport, Tier::kHbm, Range(0, 40000));
  AddAction(&list, ActionType::kRevoke, Tier::kDram, Range(0, 100));
  auto requests = ChunkActions(list, Header(), 1);
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].actions(0).hashes_size(), 16384);
  EXPECT_EQ(requests[1].actions(0).hashes_size(), 16384);
  ASSERT_EQ(requests[2].actions_size(), 2);
  EXPECT_EQ(requests[2].actions(0).hashes_size(), 40000 - 2 * 16384);
  EXPECT_EQ(requests[2].actions(0).hashes(0), 32768);
  EXPECT_EQ(requests[2].actions(1).hashes_size(), 100);
  EXPECT_EQ(requests[2].actions(0).component_masks_size(), 0);
  size_t total = 0;
  for (const auto& r : requests) {
    size_t in_request = 0;
    for (const auto& a : r.actions())
      in_request += static_cast<size_t>(a.hashes_size());
    EXPECT_LE(in_request, 16384u);
    EXPECT_LE(r.actions_size(), 256);
    total += in_request;
  }
  EXPECT_EQ(total, 40100u);
}

TEST(Chunker, ExplicitLimits) {
  ActionList list;
  for (int i = 0; i < 5; ++i) {
    AddAction(&list, ActionType::kReport, Tier::kHbm, Range(i * 3, i * 3 + 3),
              {1, 2, 3}, {4, 5, 6});
  }
  auto requests = ChunkActions(list, Header(), 1, ChunkLimits{4, 2});
  // Each 3-hash action: a second one would exceed 4 hashes.
  ASSERT_EQ(requests.size(), 5u);
  EXPECT_EQ(DescribeActions(requests[4]),
            (Actions{"REPORT HBM [12,13,14] masks=[1,2,3] sizes=[4,5,6]"}));
}

}  // namespace
}  // namespace kvindexer::bridge
