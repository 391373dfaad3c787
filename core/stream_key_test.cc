#include "core/stream_key.h"

#include <string>

#include "gtest/gtest.h"

namespace kvindexer {
namespace stream_key_test {

TEST(StreamKeyTest, ALegacyKeyIsItsWorkerIdUnchanged) {
  EXPECT_EQ(EncodeStreamKey({"", "worker-a", 0}), "worker-a");
  EXPECT_EQ(DecodeStreamKey("worker-a"), (StreamKey{"", "worker-a", 0}));
  EXPECT_TRUE((StreamKey{"", "w", 0}).legacy());
  EXPECT_FALSE((StreamKey{"", "w", 1}).legacy());
  EXPECT_FALSE((StreamKey{"ns", "w", 0}).legacy());
}

TEST(StreamKeyTest, OtherKeysEncodeWithTheMarkerLengthsAndRank) {
  const std::string id = EncodeStreamKey({"ns", "w", 258});
  const std::string expected(
      "\xFF\0\0\0\x02"
      "ns\0\0\0\x01"
      "w\0\0\x01\x02",
      16);
  EXPECT_EQ(id, expected);
  EXPECT_TRUE(IsEncodedStreamKey(id));
  EXPECT_EQ(DecodeStreamKey(id), (StreamKey{"ns", "w", 258}));
}

TEST(StreamKeyTest, EveryKeyRoundTripsAndDistinctKeysStayDistinct) {
  const StreamKey keys[] = {{"", "w", 0},
                            {"", "w", 1},
                            {"n", "w", 0},
                            {"nw", "", 0},
                            {"n", "w\0", 0},
                            {"", std::string("a\0b", 3), 7},
                            {"a/b", "c", 4294967295u}};
  for (const StreamKey& a : keys) {
    EXPECT_EQ(DecodeStreamKey(EncodeStreamKey(a)), a) << StreamKeyText(a);
    for (const StreamKey& b : keys) {
      if (a == b) continue;
      EXPECT_NE(EncodeStreamKey(a), EncodeStreamKey(b))
          << StreamKeyText(a) << " vs " << StreamKeyText(b);
    }
  }
}

TEST(StreamKeyTest, AMalformedEncodingIsTakenAsALegacyWorkerId) {
  const std::string truncated(
      "\xFF\0\0\0\x05"
      "ab",
      7);
  EXPECT_EQ(DecodeStreamKey(truncated), (StreamKey{"", truncated, 0}));
  // A well-formed encoding of the legacy key is not produced by
  // EncodeStreamKey, and is not decoded as one either.
  const std::string legacy_form(
      "\xFF\0\0\0\0\0\0\0\x01"
      "w\0\0\0\0",
      14);
  EXPECT_EQ(DecodeStreamKey(legacy_form).worker_id, legacy_form);
}

TEST(StreamKeyTest, KeysOrderByNamespaceThenWorkerThenRank) {
  EXPECT_LT((StreamKey{"", "a", 1}), (StreamKey{"", "b", 0}));
  EXPECT_LT((StreamKey{"", "b", 9}), (StreamKey{"a", "a", 0}));
  EXPECT_LT((StreamKey{"a", "a", 0}), (StreamKey{"a", "a", 1}));
}

TEST(StreamKeyTest, StreamIdMessagesConvertBothWays) {
  ::kv_indexer::v1::StreamId id;
  SetStreamId({"ns", "w", 3}, &id);
  EXPECT_EQ(id.namespace_(), "ns");
  EXPECT_EQ(id.worker_id(), "w");
  EXPECT_EQ(id.dp_rank(), 3u);
  EXPECT_EQ(StreamKeyOf(id), (StreamKey{"ns", "w", 3}));
  EXPECT_EQ(StreamKeyText({"ns", "w", 3}), "ns/w/3");
}

TEST(StreamKeyTest, IdsOrderByTheirKeysBytewise) {
  // In key order: namespace, then worker id (unsigned bytes), then rank.
  const StreamKey keys[] = {
      {"", "a", 0},        {"", "a", 1},        {"", "a", 256}, {"", "b", 0},
      {"", "\xc3\xa9", 0}, {"", "\xc3\xa9", 2}, {"n", "a", 0},  {"n", "a", 1},
      {"n", "b", 0},       {"o", "", 0}};
  const StreamIdOrder less;
  for (size_t i = 0; i < std::size(keys); ++i) {
    for (size_t j = 0; j < std::size(keys); ++j) {
      const std::string a = EncodeStreamKey(keys[i]);
      const std::string b = EncodeStreamKey(keys[j]);
      EXPECT_EQ(less(a, b), i < j)
          << StreamKeyText(keys[i]) << " vs " << StreamKeyText(keys[j]);
    }
  }
  // A malformed encoding is a legacy id: ordered among them by its bytes,
  // and equivalent to no other id.
  const std::string malformed("\xFF\0", 2);
  EXPECT_TRUE(less(EncodeStreamKey({"", "a", 0}), malformed));
  EXPECT_TRUE(less(malformed, EncodeStreamKey({"n", "a", 0})));
  EXPECT_FALSE(less(malformed, malformed));
}

}  // namespace stream_key_test
}  // namespace kvindexer
