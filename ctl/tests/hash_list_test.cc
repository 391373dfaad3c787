#include "ctl/hash_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

namespace kvindexer::ctl {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(HashListTest, SignedUnsignedAndHexAreTheSameBits) {
  EXPECT_EQ(*ParseHash("-1"), -1);
  EXPECT_EQ(*ParseHash("18446744073709551615"), -1);
  EXPECT_EQ(*ParseHash("0xffffffffffffffff"), -1);
  EXPECT_EQ(*ParseHash("0XFF"), 255);
  EXPECT_EQ(*ParseHash("9223372036854775807"),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(*ParseHash("-9223372036854775808"),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(*ParseHash("0"), 0);
}

TEST(HashListTest, RejectsWhatIsNotAHash) {
  for (const char* bad : {"", "+1", "1.5", "0x", "0xg", "--1", "1e3",
                          "0x00000000000000001", "99999999999999999999"}) {
    absl::StatusOr<int64_t> h = ParseHash(bad);
    EXPECT_FALSE(h.ok()) << bad;
    EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(HashListTest, SplitsOnCommasAndWhitespace) {
  std::vector<int64_t> out;
  ASSERT_TRUE(AppendHashes("1,2 3\n\t4,,5\r\n", "stdin", &out).ok());
  ASSERT_TRUE(AppendHashes("  ", "argument 2", &out).ok());
  EXPECT_THAT(out, ElementsAre(1, 2, 3, 4, 5));
}

TEST(HashListTest, ErrorNamesTheOrigin) {
  std::vector<int64_t> out;
  absl::Status s = AppendHashes("1 x2", "argument 3", &out);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("argument 3: bad hash \"x2\""));
}

}  // namespace
}  // namespace kvindexer::ctl
