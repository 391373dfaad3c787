// MappingPool: reuse, growth by mremap, the cache limit and shrinking.
#include "mapping_pool.h"

#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace kvindexer::robin {
namespace {

TEST(MappingPoolTest, ReusesAGivenMappingAndGrowsItKeepingItsPages) {
  MappingPool pool;
  const size_t page = MappingPool::RoundUpToPage(1);
  MappingPool::Mapping first = pool.Take(3 * page);
  EXPECT_EQ(first.bytes, 3 * page);
  std::memset(first.data, 0x5a, first.bytes);
  pool.Give(first);
  EXPECT_EQ(pool.cached_bytes(), 3 * page);
  // Larger than anything cached: the cached mapping grows (its old pages
  // keep their contents; mremap may move them).
  MappingPool::Mapping grown = pool.Take(5 * page);
  EXPECT_EQ(grown.bytes, 5 * page);
  EXPECT_EQ(pool.cached_bytes(), 0u);
  EXPECT_EQ(static_cast<unsigned char>(grown.data[3 * page - 1]), 0x5a);
  grown.data[5 * page - 1] = 1;  // the new pages are writable
  pool.Give(grown);
}

TEST(MappingPoolTest, TakesTheSmallestMappingThatFits) {
  MappingPool pool;
  const size_t page = MappingPool::RoundUpToPage(1);
  MappingPool::Mapping small = pool.Take(page);
  MappingPool::Mapping medium = pool.Take(4 * page);
  MappingPool::Mapping large = pool.Take(16 * page);
  char* const medium_data = medium.data;
  pool.Give(small);
  pool.Give(large);
  pool.Give(medium);
  MappingPool::Mapping taken = pool.Take(3 * page);
  EXPECT_EQ(taken.data, medium_data);
  EXPECT_EQ(taken.bytes, 4 * page);
  EXPECT_EQ(pool.cached_bytes(), 17 * page);
  pool.Give(taken);
}

TEST(MappingPoolTest, KeepsOnlyTheLargestMappings) {
  MappingPool pool;
  const size_t page = MappingPool::RoundUpToPage(1);
  std::vector<MappingPool::Mapping> mappings;
  for (size_t pages = 1; pages <= MappingPool::kCached + 2; ++pages) {
    mappings.push_back(pool.Take(pages * page));
  }
  for (const MappingPool::Mapping& mapping : mappings) pool.Give(mapping);
  // Pages 3..6 stay cached; the two smallest were unmapped.
  EXPECT_EQ(pool.cached_bytes(), (3 + 4 + 5 + 6) * page);
}

TEST(MappingPoolTest, ShrinkReturnsTheTail) {
  const size_t page = MappingPool::RoundUpToPage(1);
  MappingPool::Mapping mapping = MappingPool::Map(8 * page);
  MappingPool::Shrink(&mapping, 2 * page + 1);
  EXPECT_EQ(mapping.bytes, 3 * page);
  mapping.data[3 * page - 1] = 1;
  MappingPool::Shrink(&mapping, 0);
  EXPECT_EQ(mapping.bytes, 0u);
  EXPECT_EQ(mapping.data, nullptr);
  MappingPool::Unmap(mapping);
}

}  // namespace
}  // namespace kvindexer::robin
