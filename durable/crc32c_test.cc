#include "durable/crc32c.h"

#include <cstdint>
#include <string>
#include <string_view>

#include "gtest/gtest.h"

namespace kvindexer::durable {
namespace {

using CrcFunction = uint32_t (*)(std::string_view, uint32_t);

// Every test runs on Crc32c (the CPU's instruction where there is one) and
// on the tables alone.
class Crc32cTest : public ::testing::TestWithParam<CrcFunction> {
 protected:
  uint32_t Crc(std::string_view data, uint32_t crc = 0) const {
    return GetParam()(data, crc);
  }
};

INSTANTIATE_TEST_SUITE_P(Ways, Crc32cTest,
                         ::testing::Values(&Crc32c, &Crc32cPortable));

// Check values from RFC 3720 (iSCSI), appendix B.4, and the common
// "123456789" check value of CRC-32C.
TEST_P(Crc32cTest, KnownValues) {
  EXPECT_EQ(Crc(""), 0u);
  EXPECT_EQ(Crc("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc(std::string(32, '\xFF')), 0x62A8AB43u);
  std::string ascending;
  std::string descending;
  for (int i = 0; i < 32; ++i) {
    ascending.push_back(static_cast<char>(i));
    descending.push_back(static_cast<char>(31 - i));
  }
  EXPECT_EQ(Crc(ascending), 0x46DD794Eu);
  EXPECT_EQ(Crc(descending), 0x113FDB5Cu);
}

// A bit-at-a-time reference: the slicing tables must agree with it for
// every length and alignment around the 8-byte steps.
uint32_t BitwiseCrc32c(const std::string& data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const char c : data) {
    crc ^= static_cast<unsigned char>(c);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc >> 1) ^ ((crc & 1u) != 0 ? 0x82F63B78u : 0u);
    }
  }
  return ~crc;
}

TEST_P(Crc32cTest, MatchesBitwiseReferenceForEveryLengthAndOffset) {
  std::string data;
  uint32_t x = 12345;
  for (int i = 0; i < 200; ++i) {
    x = x * 1103515245u + 12345u;
    data.push_back(static_cast<char>(x >> 16));
  }
  for (size_t offset = 0; offset < 9; ++offset) {
    for (size_t length = 0; offset + length <= 80; ++length) {
      const std::string piece = data.substr(offset, length);
      ASSERT_EQ(Crc(piece), BitwiseCrc32c(piece))
          << "offset " << offset << " length " << length;
    }
  }
  EXPECT_EQ(Crc(data), BitwiseCrc32c(data));
}

TEST_P(Crc32cTest, ExtendsOverPieces) {
  const std::string data = "the quick brown fox jumps over the lazy dog";
  for (size_t split = 0; split <= data.size(); ++split) {
    EXPECT_EQ(Crc(data.substr(split), Crc(data.substr(0, split))), Crc(data))
        << "split at " << split;
  }
}

TEST(Crc32cHardwareTest, SaysWhichWayItRuns) {
#if defined(__x86_64__)
  EXPECT_EQ(Crc32cInHardware(), __builtin_cpu_supports("sse4.2") != 0);
#else
  EXPECT_FALSE(Crc32cInHardware());
#endif
}

}  // namespace
}  // namespace kvindexer::durable
