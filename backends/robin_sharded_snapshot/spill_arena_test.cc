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

TEST(SpillArenaTest, ArraysKeepCountAndCapacityAndAreReused) {
  SpillArena arena;
  EXPECT_EQ(arena.bytes(), 0u);
  Placement* a = arena.Allocate(5);
  EXPECT_EQ(SpillArena::Count(a), 5u);
  EXPECT_TRUE(SpillArena::IsPrivate(a));
  SpillArena::ClearPrivate(a);
  EXPECT_FALSE(SpillArena::IsPrivate(a));
  EXPECT_EQ(SpillArena::Capacity(a), 6u);
  for (uint32_t i = 0; i < 6; ++i) a[i] = Placement{i, 1, i};
  const uint64_t slab_bytes = arena.bytes();
  EXPECT_GT(slab_bytes, 0u);
  arena.Free(a);
  Placement* b = arena.Allocate(6);
  EXPECT_EQ(b, a) << "a freed slot is reused first";
  EXPECT_TRUE(SpillArena::IsPrivate(b)) << "a new array starts private";
  EXPECT_EQ(arena.bytes(), slab_bytes);
}

TEST(SpillArenaTest, LargeArraysAreSeparateAllocations) {
  SpillArena arena;
  Placement* big = arena.Allocate(5000);
  EXPECT_EQ(SpillArena::Capacity(big), 6144u);
  EXPECT_EQ(arena.bytes(), 8u + 6144u * 12);
  big[6143] = Placement{1, 2, 3};
  SpillArena::SetCount(big, 6144);
  EXPECT_EQ(SpillArena::Count(big), 6144u);
  arena.Free(big);
  EXPECT_EQ(arena.bytes(), 0u);
}

TEST(SpillArenaTest, ManyArraysDoNotOverlap) {
  SpillArena arena;
  std::vector<Placement*> arrays;
  for (uint32_t i = 0; i < 20000; ++i) {
    Placement* a = arena.Allocate(2 + i % 40);
    for (uint32_t j = 0; j < 2 + i % 40; ++j) a[j] = Placement{i, 2, j};
    arrays.push_back(a);
  }
  for (uint32_t i = 0; i < arrays.size(); ++i) {
    ASSERT_EQ(SpillArena::Count(arrays[i]), 2 + i % 40);
    for (uint32_t j = 0; j < 2 + i % 40; ++j) {
      ASSERT_EQ(arrays[i][j].worker, i);
      ASSERT_EQ(arrays[i][j].mask, j);
    }
  }
}

}  // namespace
}  // namespace kvindexer::robin

namespace kvindexer::robin {
namespace {

TEST(SpillArenaTest, EmptySlabsGoBackToTheHeap) {
  SpillArena arena;
  std::vector<Placement*> small;
  for (int i = 0; i < 100000; ++i) small.push_back(arena.Allocate(2));
  const uint64_t full = arena.bytes();
  EXPECT_GE(full, 100000u * 32);
  // Promote every array to a larger class, as blocks gaining workers do.
  std::vector<Placement*> larger;
  for (Placement* a : small) {
    larger.push_back(arena.Allocate(3));
    arena.Free(a);
  }
  const uint64_t after = arena.bytes();
  // What remains is the class-3 arrays plus at most two spare slabs of
  // class 2.
  EXPECT_LE(after, 100000u * 48 + 100000u * 48 / 20 + 2 * 64 * 1024 + 65536);
  for (Placement* a : larger) arena.Free(a);
  EXPECT_LE(arena.bytes(), 4u * 64 * 1024);
}

}  // namespace
}  // namespace kvindexer::robin
