// common/uuid.h: the text form, and the version and variant bits of random
// UUIDs.
#include "common/uuid.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace kvindexer::uuid_test {
namespace {

TEST(UuidTest, FormatsBytesInOrder) {
  const UuidBytes bytes{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                        0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
  EXPECT_EQ(FormatUuid(bytes), "00112233-4455-6677-8899-aabbccddeeff");
  EXPECT_EQ(FormatUuid(UuidBytes{}), "00000000-0000-0000-0000-000000000000");
}

TEST(UuidTest, TextFormIsCheckedCharacterByCharacter) {
  EXPECT_TRUE(IsUuidText("00112233-4455-6677-8899-aabbccddeeff"));
  EXPECT_FALSE(IsUuidText(""));
  EXPECT_FALSE(IsUuidText("00112233-4455-6677-8899-aabbccddeef"));    // 35
  EXPECT_FALSE(IsUuidText("00112233-4455-6677-8899-aabbccddeeff0"));  // 37
  EXPECT_FALSE(IsUuidText("00112233-4455-6677-8899-AABBCCDDEEFF"));   // upper
  EXPECT_FALSE(IsUuidText("0011223304455-6677-8899-aabbccddeeff"));   // hyphen
  EXPECT_FALSE(IsUuidText("00112233-4455-6677-8899-aabbccddeefg"));   // g
  EXPECT_FALSE(IsUuidText("00112233-4455-6677-8899-aabbccdd-eff"));
}

TEST(UuidTest, RandomUuidsAreVersion4Variant10AndDistinct) {
  std::set<std::string> seen;
  // Each of the 122 random bits is 0 in some UUID and 1 in another.
  UuidBytes ones{};
  UuidBytes zeros{};
  zeros.fill(0xff);
  for (int i = 0; i < 1000; ++i) {
    const std::string uuid = NewRandomUuid();
    ASSERT_TRUE(IsUuidText(uuid)) << uuid;
    EXPECT_EQ(uuid[14], '4') << uuid;  // version
    EXPECT_TRUE(uuid[19] == '8' || uuid[19] == '9' || uuid[19] == 'a' ||
                uuid[19] == 'b')
        << uuid;  // variant 10xx
    EXPECT_TRUE(seen.insert(uuid).second) << uuid;
    std::string hex;
    for (char c : uuid) {
      if (c != '-') hex.push_back(c);
    }
    for (size_t b = 0; b < 16; ++b) {
      const auto byte =
          static_cast<uint8_t>(std::stoul(hex.substr(2 * b, 2), nullptr, 16));
      ones[b] |= byte;
      zeros[b] &= byte;
    }
  }
  for (size_t b = 0; b < 16; ++b) {
    uint8_t fixed_mask = 0;
    if (b == 6) fixed_mask = 0xf0;
    if (b == 8) fixed_mask = 0xc0;
    EXPECT_EQ(ones[b] | fixed_mask, 0xff) << "byte " << b;
    EXPECT_EQ(zeros[b] & static_cast<uint8_t>(~fixed_mask), 0) << "byte " << b;
  }
}

}  // namespace
}  // namespace kvindexer::uuid_test
