// PlacementList on its own: inline and heap storage, order, and that removal
// followed by re-insertion at the same index never allocates.
#include "placement_list.h"

#include <vector>

#include "gtest/gtest.h"

namespace kvindexer::absl_rwlock {
namespace {

std::vector<uint32_t> Keys(const PlacementList& list) {
  std::vector<uint32_t> keys;
  for (size_t i = 0; i < list.size(); ++i) keys.push_back(list[i].key);
  return keys;
}

TEST(PlacementListTest, OnePlacementStaysInline) {
  PlacementList list;
  EXPECT_TRUE(list.empty());
  EXPECT_EQ(list.capacity(), 1u);
  list.push_back({5, 7});
  EXPECT_EQ(list.size(), 1u);
  EXPECT_EQ(list.HeapBytes(), 0u);
  EXPECT_EQ(list[0].key, 5u);
  EXPECT_EQ(list[0].mask, 7u);
}

TEST(PlacementListTest, GrowsOnTheHeapKeepingInsertionOrder) {
  PlacementList list;
  for (uint32_t k = 1; k <= 5; ++k) list.push_back({k * 10, k});
  EXPECT_EQ(Keys(list), (std::vector<uint32_t>{10, 20, 30, 40, 50}));
  EXPECT_EQ(list.capacity(), 8u);
  EXPECT_EQ(list.HeapBytes(), 8u + 8 * 8);
  list.erase_at(1);
  EXPECT_EQ(Keys(list), (std::vector<uint32_t>{10, 30, 40, 50}));
  EXPECT_EQ(list.capacity(), 8u);  // erase keeps the capacity
  list.insert_at(1, {20, 2});
  EXPECT_EQ(Keys(list), (std::vector<uint32_t>{10, 20, 30, 40, 50}));
  list.shrink_to_fit();  // more than one left: stays on the heap
  EXPECT_GT(list.HeapBytes(), 0u);
}

TEST(PlacementListTest, ShrinksBackInlineWithOnePlacementLeft) {
  PlacementList list;
  list.push_back({1, 0});
  list.push_back({2, 9});
  list.erase_at(0);
  EXPECT_EQ(list.capacity(), 2u);
  list.shrink_to_fit();
  EXPECT_EQ(list.HeapBytes(), 0u);
  EXPECT_EQ(list.capacity(), 1u);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].key, 2u);
  EXPECT_EQ(list[0].mask, 9u);
  // An inline placement removed can be put back without allocating.
  list.erase_at(0);
  list.insert_at(0, {2, 9});
  EXPECT_EQ(list.HeapBytes(), 0u);
  EXPECT_EQ(list[0].mask, 9u);
}

TEST(PlacementListTest, MovesTransferTheHeapArray) {
  PlacementList a;
  for (uint32_t k = 0; k < 3; ++k) a.push_back({k, k});
  const PackedPlacement* array = a.data();
  PlacementList b(std::move(a));
  EXPECT_EQ(b.data(), array);
  EXPECT_EQ(Keys(b), (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.HeapBytes(), 0u);
  PlacementList c;
  c.push_back({9, 9});
  c = std::move(b);
  EXPECT_EQ(Keys(c), (std::vector<uint32_t>{0, 1, 2}));
}

}  // namespace
}  // namespace kvindexer::absl_rwlock
