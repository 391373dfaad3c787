// WorkerOrdinals: fresh ordinals in order, released ones reused lowest first.
#include "worker_ordinals.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace kvindexer::robin {
namespace {

std::vector<uint32_t> TakeN(WorkerOrdinals& ordinals, int n) {
  std::vector<uint32_t> taken;
  for (int i = 0; i < n; ++i) {
    taken.push_back(ordinals.Next());
    ordinals.Take();
  }
  return taken;
}

TEST(WorkerOrdinalsTest, HandsOutFreshOrdinalsInOrder) {
  WorkerOrdinals ordinals;
  EXPECT_EQ(TakeN(ordinals, 4), (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(ordinals.end(), 4u);
  EXPECT_EQ(ordinals.free_count(), 0u);
}

TEST(WorkerOrdinalsTest, ReusesReleasedOrdinalsLowestFirst) {
  WorkerOrdinals ordinals;
  TakeN(ordinals, 8);
  for (const uint32_t o : {5u, 2u, 7u, 0u}) {
    ordinals.ReserveRelease();
    ordinals.Release(o);
  }
  EXPECT_EQ(ordinals.free_count(), 4u);
  EXPECT_EQ(TakeN(ordinals, 6), (std::vector<uint32_t>{0, 2, 5, 7, 8, 9}));
  EXPECT_EQ(ordinals.end(), 10u);
  // Next() does not take: it keeps naming the same ordinal until Take().
  ordinals.ReserveRelease();
  ordinals.Release(3);
  EXPECT_EQ(ordinals.Next(), 3u);
  EXPECT_EQ(ordinals.Next(), 3u);
  ordinals.Take();
  EXPECT_EQ(ordinals.Next(), 10u);
}

}  // namespace
}  // namespace kvindexer::robin
