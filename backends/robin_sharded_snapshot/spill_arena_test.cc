#include "spill_arena.h"

#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace kvindexer::robin {
namespace {

TEST(SpillArenaTest, ClassesGrowByAboutOneAndAHalf) {
  EXPECT_EQ(SpillArena::CapacityFor(2), 2u);
  EXPECT_EQ(SpillArena::CapacityFor(3), 3u);
  EXPECT_EQ(SpillArena::CapacityFor(5), 6u);
  EXPECT_EQ(SpillArena::CapacityFor(32), 32u);
  EXPECT_EQ(SpillArena::CapacityFor(33), 48u);
  EXPECT_EQ(SpillArena::CapacityFor(5000), 6144u);
}

TEST(SpillArenaTest, ArraysKeepTagAndCapacityAndAreReused) {
  SpillArena arena;
  EXPECT_EQ(arena.bytes(), 0u);
  PackedPlacement* a = arena.Allocate(5, 77);
  EXPECT_EQ(SpillArena::Tag(a), 77u);
  EXPECT_EQ(SpillArena::Capacity(a), 6u);
  for (uint32_t i = 0; i < 6; ++i) a[i] = PackedPlacement{i, i};
  const uint64_t slab_bytes = arena.bytes();
  EXPECT_GT(slab_bytes, 0u);
  arena.Free(a);
  PackedPlacement* b = arena.Allocate(6, 78);
  EXPECT_EQ(b, a) << "a freed slot is reused first";
  EXPECT_EQ(SpillArena::Tag(b), 78u);
  EXPECT_EQ(arena.bytes(), slab_bytes);
}

TEST(SpillArenaTest, LargeArraysAreSeparateAllocations) {
  SpillArena arena;
  PackedPlacement* big = arena.Allocate(5000, 1);
  EXPECT_EQ(SpillArena::Capacity(big), 6144u);
  EXPECT_EQ(arena.bytes(), (6144u + 1) * 8);
  big[6143] = PackedPlacement{1, 2};
  arena.Free(big);
  EXPECT_EQ(arena.bytes(), 0u);
}

TEST(SpillArenaTest, ManyArraysDoNotOverlap) {
  SpillArena arena;
  std::vector<PackedPlacement*> arrays;
  for (uint32_t i = 0; i < 20000; ++i) {
    PackedPlacement* a = arena.Allocate(2 + i % 40, i);
    for (uint32_t j = 0; j < 2 + i % 40; ++j) a[j] = PackedPlacement{i, j};
    arrays.push_back(a);
  }
  for (uint32_t i = 0; i < arrays.size(); ++i) {
    ASSERT_EQ(SpillArena::Tag(arrays[i]), i);
    for (uint32_t j = 0; j < 2 + i % 40; ++j) {
      ASSERT_EQ(arrays[i][j].key, i);
      ASSERT_EQ(arrays[i][j].mask, j);
    }
  }
}

}  // namespace
}  // namespace kvindexer::robin
