// KV_INDEXER_ROBIN_MERGE_MIN_DELTA: accepted values, and refusals that name
// the variable.
#include "merge_config.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "recording_visitor.h"
#include "robin_backend.h"
#include "robin_backend_testing.h"
#include "tests/support/requests.h"

namespace kvindexer::robin {
namespace {

TEST(MergeConfigTest, UnsetMeansTheDefault) {
  size_t min_delta = 7;
  char error[256] = "";
  ASSERT_TRUE(
      ParseMergeMinDelta(nullptr, 1024, &min_delta, error, sizeof(error)));
  EXPECT_EQ(min_delta, 1024u);
}

TEST(MergeConfigTest, AcceptsWholeNumbers) {
  char error[256] = "";
  for (const auto& [text, expected] : {std::pair<const char*, size_t>{"0", 0},
                                       {"1", 1},
                                       {"65536", 65536},
                                       {"4294967295", 4294967295u}}) {
    size_t min_delta = 7;
    ASSERT_TRUE(
        ParseMergeMinDelta(text, 1024, &min_delta, error, sizeof(error)))
        << text;
    EXPECT_EQ(min_delta, expected) << text;
  }
}

TEST(MergeConfigTest, RefusesAnythingElseNamingTheVariable) {
  for (const char* text : {"", "-1", "+5", "1k", " 10", "10 ", "0x10",
                           "4294967296", "99999999999999999999999"}) {
    size_t min_delta = 7;
    char error[256] = "";
    EXPECT_FALSE(
        ParseMergeMinDelta(text, 1024, &min_delta, error, sizeof(error)))
        << text;
    EXPECT_EQ(min_delta, 7u) << text;
    EXPECT_NE(std::string(error).find("KV_INDEXER_ROBIN_MERGE_MIN_DELTA=\"" +
                                      std::string(text) + "\""),
              std::string::npos)
        << error;
  }
}

// The plugin's create() path: the variable's value reaches the merge policy.
TEST(MergeConfigTest, CreatedBackendsFollowTheVariable) {
  std::vector<int64_t> hashes(64);
  for (size_t i = 0; i < hashes.size(); ++i) hashes[i] = int64_t(i) * 11;
  auto apply_twice = [&](RobinShardedSnapshotBackend& backend) {
    for (uint32_t tier : {kTierHbm, kTierDram}) {
      test_support::Batch batch("w", "a");
      batch.Report(tier, hashes);
      ASSERT_TRUE(
          testing::Ok(backend.Apply(test_support::BatchView(batch).view())));
    }
  };
  char error[256] = "";
  std::unique_ptr<RobinShardedSnapshotBackend> merging(
      CreateConfiguredBackend("0", error, sizeof(error)));
  ASSERT_NE(merging, nullptr) << error;
  apply_twice(*merging);
  EXPECT_EQ(RobinBackendTesting::Merges(*merging), 2u);

  std::unique_ptr<RobinShardedSnapshotBackend> by_default(
      CreateConfiguredBackend(nullptr, error, sizeof(error)));
  ASSERT_NE(by_default, nullptr) << error;
  apply_twice(*by_default);
  EXPECT_EQ(RobinBackendTesting::Merges(*by_default), 0u);

  EXPECT_EQ(CreateConfiguredBackend("lots", error, sizeof(error)), nullptr);
  EXPECT_NE(std::string(error).find(kMergeMinDeltaVariable), std::string::npos)
      << error;
}

}  // namespace
}  // namespace kvindexer::robin
