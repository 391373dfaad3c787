#include "common/unicode_blank.h"

#include "gtest/gtest.h"

namespace kvindexer {
namespace unicode_blank_test {

TEST(UnicodeBlankTest, EmptyAndWhiteSpaceOnlyAreBlank) {
  EXPECT_TRUE(IsUnicodeBlank(""));
  EXPECT_TRUE(IsUnicodeBlank(" \t\r\n\v\f"));
  EXPECT_TRUE(IsUnicodeBlank("\xC2\xA0"));                   // U+00A0
  EXPECT_TRUE(IsUnicodeBlank("\xE3\x80\x80 \xE2\x80\xAF"));  // U+3000 U+202F
  EXPECT_TRUE(IsUnicodeBlank("\xE2\x80\x8A\xC2\x85"));       // U+200A U+0085
}

TEST(UnicodeBlankTest, AnythingElseIsNotBlank) {
  EXPECT_FALSE(IsUnicodeBlank(" w "));
  EXPECT_FALSE(IsUnicodeBlank("\xE2\x80\x8B"));  // U+200B is not White_Space
  EXPECT_FALSE(IsUnicodeBlank("\xF0\x9F\x98\x80"));
  EXPECT_FALSE(IsUnicodeBlank(std::string_view("\0", 1)));
  EXPECT_FALSE(IsUnicodeBlank("\xC2"));  // truncated sequence
}

}  // namespace unicode_blank_test
}  // namespace kvindexer
