#include "common/loopback_address.h"

#include "gtest/gtest.h"

namespace kvindexer {
namespace loopback_address_test {

TEST(IsLoopbackLiteralTest, LoopbackRanges) {
  EXPECT_TRUE(IsLoopbackLiteral("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackLiteral("127.1.2.3"));
  EXPECT_TRUE(IsLoopbackLiteral("127.255.255.255"));
  EXPECT_TRUE(IsLoopbackLiteral("::1"));
  EXPECT_TRUE(IsLoopbackLiteral("::ffff:127.0.0.1"));
}

TEST(IsLoopbackLiteralTest, EverythingElse) {
  EXPECT_FALSE(IsLoopbackLiteral("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackLiteral("::"));
  EXPECT_FALSE(IsLoopbackLiteral("128.0.0.1"));
  EXPECT_FALSE(IsLoopbackLiteral("10.0.0.5"));
  EXPECT_FALSE(IsLoopbackLiteral("::2"));
  EXPECT_FALSE(IsLoopbackLiteral("::ffff:10.0.0.1"));
  EXPECT_FALSE(IsLoopbackLiteral("fe80::1"));
  EXPECT_FALSE(IsLoopbackLiteral("localhost"));
  EXPECT_FALSE(IsLoopbackLiteral(""));
}

}  // namespace loopback_address_test
}  // namespace kvindexer
