#include "common/heartbeat_header.h"

#include <gtest/gtest.h>

#include <string>

namespace kvindexer {
namespace {

using Kind = HeartbeatHeader::Kind;

TEST(HeartbeatHeaderTest, AcceptsOneToTheLargestUint32) {
  for (const auto& [text, ms] : {std::pair<const char*, int64_t>{"1", 1},
                                 {"30000", 30000},
                                 {"007", 7},
                                 {"4294967295", 4294967295}}) {
    const HeartbeatHeader h = HeartbeatHeader::Parse(text);
    EXPECT_EQ(h.kind, Kind::kValid) << text;
    EXPECT_EQ(h.ttl.count(), ms) << text;
  }
}

TEST(HeartbeatHeaderTest, EverythingElseIsMalformed) {
  for (const char* bad : {"", "0", "000", "-1", "+5", " 5", "5 ", "5ms", "1.5",
                          "0x10", "4294967296", "99999999999999999999999"}) {
    const HeartbeatHeader h = HeartbeatHeader::Parse(bad);
    EXPECT_EQ(h.kind, Kind::kMalformed) << bad;
    EXPECT_EQ(h.value, bad);
  }
}

TEST(HeartbeatHeaderTest, KeepsOnlyTheStartOfALongValue) {
  const std::string long_value(1000, 'x');
  const HeartbeatHeader h = HeartbeatHeader::Parse(long_value);
  EXPECT_EQ(h.kind, Kind::kMalformed);
  EXPECT_EQ(h.value, long_value.substr(0, HeartbeatHeader::kMaxKeptValueBytes));
}

TEST(HeartbeatHeaderTest, DefaultIsAbsent) {
  EXPECT_EQ(HeartbeatHeader{}.kind, Kind::kAbsent);
}

}  // namespace
}  // namespace kvindexer
