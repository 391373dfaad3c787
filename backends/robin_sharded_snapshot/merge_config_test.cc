// KV_INDEXER_ROBIN_MERGE_MIN_DELTA: accepted values, and refusals that name
// the variable.
#include "merge_config.h"

#include <string>

#include "gtest/gtest.h"

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

}  // namespace
}  // namespace kvindexer::robin
