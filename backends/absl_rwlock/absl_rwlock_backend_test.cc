#include "absl_rwlock_backend.h"

#include "gtest/gtest.h"

namespace kvindexer::absl_rwlock {
namespace {

TEST(AbslRwlockBackendTest, StartsEmpty) {
  AbslRwlockBackend backend;
  BackendStats stats{};
  stats.struct_size = sizeof(stats);
  backend.GetStats(&stats);
  EXPECT_EQ(stats.blocks, 0u);
}

}  // namespace
}  // namespace kvindexer::absl_rwlock
