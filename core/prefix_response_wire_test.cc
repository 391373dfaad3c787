// The hand-written prefix response encoding must produce exactly the bytes of
// the generated message's serializer.
#include "core/prefix_response_wire.h"

#include <stdint.h>

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kv_indexer.pb.h"
#include "tests/support/prefix_response.h"

namespace kvindexer {
namespace {

namespace v1 = ::kv_indexer::v1;

std::string Wire(const PrefixAnswer& answer) {
  std::string out(PrefixResponseWireSize(answer), '\0');
  uint8_t* begin = reinterpret_cast<uint8_t*>(out.data());
  const uint8_t* end = WritePrefixResponseWire(answer, begin);
  EXPECT_EQ(static_cast<size_t>(end - begin), out.size());
  return out;
}

std::string Generated(const PrefixAnswer& answer) {
  v1::MatchExternalKvPrefixResponse resp;
  test_support::FillPrefixResponse(answer, &resp);
  std::string out;
  EXPECT_TRUE(resp.SerializeToString(&out));
  return out;
}

TEST(PrefixResponseWireTest, EmptyAnswerIsEmpty) {
  EXPECT_EQ(Wire(PrefixAnswer{}), "");
  EXPECT_EQ(Generated(PrefixAnswer{}), "");
}

TEST(PrefixResponseWireTest, FirstBlockMiss) {
  const PrefixAnswer answer{{}, 0, 1};
  EXPECT_EQ(Wire(answer), std::string("\x18\x01", 2));
  EXPECT_EQ(Wire(answer), Generated(answer));
}

TEST(PrefixResponseWireTest, OneMatchByHand) {
  const std::vector<PrefixMatchView> matches{{"w", "a:1", 3}};
  const PrefixAnswer answer{matches, 3, 4};
  // matches: tag 0x0a, length 10: address (0x0a 3 "a:1"), prefix (0x10 3),
  // id (0x1a 1 "w"); then best (0x10 3) and blocks_read (0x18 4).
  const std::string expected(
      "\x0a\x0a\x0a\x03"
      "a:1\x10\x03\x1a\x01w\x10\x03\x18\x04",
      16);
  EXPECT_EQ(Wire(answer), expected);
  EXPECT_EQ(Generated(answer), expected);
}

// Zero values are omitted inside a match too, but the match itself is kept.
TEST(PrefixResponseWireTest, EmptyFieldsAndEmptyMatch) {
  const std::vector<PrefixMatchView> matches{
      {"", "", 0}, {"id", "", 7}, {"w\xc3\xb6rker", "h\xc3\xb4te:1", 2}};
  const PrefixAnswer answer{matches, 7, 0};
  EXPECT_EQ(Wire(answer), Generated(answer));
  v1::MatchExternalKvPrefixResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(Wire(answer)));
  ASSERT_EQ(parsed.matches_size(), 3);
  EXPECT_EQ(parsed.matches(1).worker_id(), "id");
}

// Lengths and values across varint boundaries.
TEST(PrefixResponseWireTest, VarintBoundaries) {
  for (size_t length : {1, 127, 128, 16383, 16384, 70000}) {
    const std::string text(length, 'x');
    for (uint32_t value : {1u, 127u, 128u, 16384u, 1u << 28, UINT32_MAX}) {
      const std::vector<PrefixMatchView> matches{{text, text, value},
                                                 {"id", text, value}};
      const PrefixAnswer answer{matches, value, value};
      ASSERT_EQ(Wire(answer), Generated(answer))
          << "length " << length << " value " << value;
    }
  }
}

TEST(PrefixResponseWireTest, RandomAnswersMatchTheGeneratedSerializer) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::vector<std::string> text;
    const size_t n = rng() % 40;
    for (size_t i = 0; i < 2 * n; ++i) {
      std::string s(rng() % 200, '\0');
      for (char& c : s) c = static_cast<char>(' ' + rng() % 95);
      text.push_back(std::move(s));
    }
    std::vector<PrefixMatchView> matches;
    for (size_t i = 0; i < n; ++i) {
      const uint32_t prefix = static_cast<uint32_t>(rng() >> (rng() % 64));
      matches.push_back({text[2 * i], text[2 * i + 1], prefix});
    }
    const PrefixAnswer answer{matches, static_cast<uint32_t>(rng() % 3000),
                              static_cast<uint32_t>(rng() % 70000)};
    ASSERT_EQ(Wire(answer), Generated(answer)) << "round " << round;
  }
}

std::string RandomText(std::mt19937_64& rng, size_t max) {
  std::string s(rng() % max, '\0');
  for (char& c : s) c = static_cast<char>(' ' + rng() % 95);
  return s;
}

TEST(PrefixResponseWireTest, CoverageAnswersMatchTheGeneratedSerializer) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 2000; ++round) {
    std::vector<std::string> text;
    const size_t n = rng() % 12;
    for (size_t i = 0; i < 5 * n + 8; ++i) text.push_back(RandomText(rng, 60));
    std::vector<StreamCoverageView> streams;
    for (size_t i = 0; i < n; ++i) {
      streams.push_back(StreamCoverageView{
          .ns = text[5 * i],
          .worker_id = text[5 * i + 1],
          .dp_rank = static_cast<uint32_t>(rng() >> (rng() % 64)),
          .worker_address = text[5 * i + 2],
          .ready = rng() % 2 == 0,
          .worker_epoch = text[5 * i + 3],
          .watermark = rng() >> (rng() % 64),
          .worker_generation = text[5 * i + 4]});
    }
    std::vector<std::string_view> uncovered;
    for (size_t i = 0; i < rng() % 4; ++i) uncovered.push_back(text[5 * n + i]);
    const PrefixCoverage coverage{streams, rng() % 2 == 0, uncovered};
    std::vector<PrefixMatchView> matches;
    for (size_t i = 0; i < n; ++i) {
      if (rng() % 3 == 0) continue;
      matches.push_back({streams[i].worker_id, streams[i].worker_address,
                         static_cast<uint32_t>(rng() % 5000), &streams[i]});
    }
    const PrefixAnswer answer{matches, static_cast<uint32_t>(rng() % 3000),
                              static_cast<uint32_t>(rng() % 70000), &coverage};
    ASSERT_EQ(Wire(answer), Generated(answer)) << "round " << round;
  }
}

TEST(PrefixResponseWireTest, ALegacyStreamIdIsWrittenEvenWhenEmpty) {
  const StreamCoverageView stream{};
  const PrefixCoverage coverage{{&stream, 1}, false, {}};
  const PrefixMatchView match{"", "a", 1, &stream};
  const PrefixAnswer answer{{&match, 1}, 1, 1, &coverage};
  EXPECT_EQ(Wire(answer), Generated(answer));
  v1::MatchExternalKvPrefixResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(Wire(answer)));
  EXPECT_TRUE(parsed.matches(0).has_stream_id());
  EXPECT_TRUE(parsed.coverage(0).has_stream_id());
}

}  // namespace
}  // namespace kvindexer
