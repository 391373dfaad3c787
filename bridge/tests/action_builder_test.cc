// Action building (docs/bridge-events.md, "Building actions"): merging, clear
// expansion and the side-array rule,
// driven from DecodedBatch values directly.
#include "bridge/action_builder.h"

#include <string>
#include <vector>

#include "bridge/tests/action_text.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace {

using ::kvindexer::bridge::testing::DescribeActions;
using ::testing::IsEmpty;
using Actions = std::vector<std::string>;

class BatchMaker {
 public:
  BatchMaker& Store(std::vector<int64_t> hashes, Tier tier,
                    std::optional<std::pair<uint32_t, uint32_t>> comp = {}) {
    return Add(EventKind::kStore, std::move(hashes), tier, comp);
  }
  BatchMaker& Remove(std::vector<int64_t> hashes, Tier tier) {
    return Add(EventKind::kRemove, std::move(hashes), tier, {});
  }
  BatchMaker& Clear() {
    batch_.events.push_back(KvEvent{});
    return *this;
  }
  const DecodedBatch& batch() const { return batch_; }

 private:
  BatchMaker& Add(EventKind kind, std::vector<int64_t> hashes, Tier tier,
                  std::optional<std::pair<uint32_t, uint32_t>> comp) {
    KvEvent ev;
    ev.kind = kind;
    ev.tier = tier;
    ev.hash_begin = batch_.hashes.size();
    ev.hash_count = hashes.size();
    if (comp) {
      ev.has_components = true;
      ev.component_mask = comp->first;
      ev.block_size = comp->second;
    }
    batch_.hashes.insert(batch_.hashes.end(), hashes.begin(), hashes.end());
    batch_.events.push_back(ev);
    return *this;
  }
  DecodedBatch batch_;
};

const std::vector<Tier> kAllTiers = {Tier::kHbm, Tier::kDram, Tier::kSsd};

Actions Build(const BatchMaker& maker,
              const std::vector<Tier>& clear_tiers = kAllTiers) {
  ActionList list;
  BuildActions(maker.batch(), clear_tiers, &list);
  EXPECT_EQ(list.hashes.size(), list.masks.size());
  EXPECT_EQ(list.hashes.size(), list.sizes.size());
  return DescribeActions(list);
}

TEST(ActionBuilder, B4RemoveThenStore) {
  EXPECT_EQ(Build(BatchMaker().Remove({9}, Tier::kHbm).Store({9}, Tier::kDram)),
            (Actions{"REVOKE HBM [9]", "REPORT DRAM [9]"}));
}

TEST(ActionBuilder, B5ClearInPlace) {
  EXPECT_EQ(
      Build(BatchMaker().Store({1}, Tier::kHbm).Clear().Store({2}, Tier::kHbm)),
      (Actions{"REPORT HBM [1]", "CLEAR HBM", "CLEAR DRAM", "CLEAR SSD",
               "REPORT HBM [2]"}));
}

TEST(ActionBuilder, ClearFollowsConfiguredOrderAndMayBeEmpty) {
  EXPECT_EQ(Build(BatchMaker().Clear(), {Tier::kSsd, Tier::kHbm}),
            (Actions{"CLEAR SSD", "CLEAR HBM"}));
  EXPECT_EQ(
      Build(BatchMaker().Store({1}, Tier::kHbm).Clear().Store({2}, Tier::kHbm),
            {}),
      (Actions{"REPORT HBM [1,2]"}));
}

TEST(ActionBuilder, ClearsNeverMerge) {
  EXPECT_EQ(Build(BatchMaker().Clear().Clear(), {Tier::kHbm}),
            (Actions{"CLEAR HBM", "CLEAR HBM"}));
}

TEST(ActionBuilder, B10Merging) {
  EXPECT_EQ(Build(BatchMaker()
                      .Store({1}, Tier::kHbm)
                      .Store({2, 3}, Tier::kHbm)
                      .Remove({4}, Tier::kHbm)
                      .Remove({5}, Tier::kHbm)
                      .Remove({6}, Tier::kDram)
                      .Store({7}, Tier::kDram)
                      .Store({8}, Tier::kSsd)),
            (Actions{"REPORT HBM [1,2,3]", "REVOKE HBM [4,5]",
                     "REVOKE DRAM [6]", "REPORT DRAM [7]", "REPORT SSD [8]"}));
}

TEST(ActionBuilder, EmptyEventsDoNotSeparateNeighbours) {
  EXPECT_EQ(Build(BatchMaker()
                      .Store({1}, Tier::kHbm)
                      .Remove({}, Tier::kHbm)
                      .Store({}, Tier::kDram)
                      .Store({2}, Tier::kHbm)),
            (Actions{"REPORT HBM [1,2]"}));
}

TEST(ActionBuilder, EmptyBatchYieldsNothing) {
  EXPECT_THAT(Build(BatchMaker()), IsEmpty());
  EXPECT_THAT(Build(BatchMaker().Store({}, Tier::kHbm)), IsEmpty());
}

TEST(ActionBuilder, B18SideArraysAlignAcrossMerge) {
  EXPECT_EQ(Build(BatchMaker()
                      .Store({1}, Tier::kHbm, std::pair{3u, 64u})
                      .Store({2}, Tier::kHbm, std::pair{1u, 32u})),
            (Actions{"REPORT HBM [1,2] masks=[3,1] sizes=[64,32]"}));
}

TEST(ActionBuilder, LegacyHashesGetExplicitZerosOnlyWhenMixed) {
  EXPECT_EQ(Build(BatchMaker()
                      .Store({1, 2}, Tier::kHbm)
                      .Store({3}, Tier::kHbm, std::pair{0u, 16u})
                      .Store({4}, Tier::kHbm)),
            (Actions{"REPORT HBM [1,2,3,4] masks=[0,0,0,0] sizes=[0,0,16,0]"}));
  EXPECT_EQ(Build(BatchMaker().Store({1, 2}, Tier::kHbm)),
            (Actions{"REPORT HBM [1,2]"}));
  // Side arrays never attach to another action.
  EXPECT_EQ(Build(BatchMaker()
                      .Store({1}, Tier::kHbm, std::pair{1u, 8u})
                      .Remove({1}, Tier::kHbm)
                      .Store({2}, Tier::kDram)),
            (Actions{"REPORT HBM [1] masks=[1] sizes=[8]", "REVOKE HBM [1]",
                     "REPORT DRAM [2]"}));
}

TEST(ActionBuilder, ReusedListIsCleared) {
  ActionList list;
  BuildActions(BatchMaker().Store({1}, Tier::kHbm).batch(), kAllTiers, &list);
  BuildActions(BatchMaker().Remove({2}, Tier::kSsd).batch(), kAllTiers, &list);
  EXPECT_EQ(DescribeActions(list), (Actions{"REVOKE SSD [2]"}));
}

}  // namespace
}  // namespace kvindexer::bridge
