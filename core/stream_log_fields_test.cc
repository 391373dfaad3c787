#include "core/stream_log_fields.h"

#include <string>

#include "core/stream_key.h"
#include "gtest/gtest.h"

namespace kvindexer {
namespace stream_log_fields_test {

TEST(StreamLogFieldsTest, ALegacyStreamIsNamedAsASeedEraWorker) {
  EXPECT_EQ(StreamLogFields(std::string_view("w1")), "worker=w1");
  EXPECT_EQ(StreamLogFields(std::string_view("w1"), LogQuotes::kDouble),
            "worker=\"w1\"");
  EXPECT_EQ(StreamLogFields(StreamKey{"", "w1", 0}), "worker=w1");
}

TEST(StreamLogFieldsTest, OtherStreamsNameTheirNamespaceAndRank) {
  const std::string id = EncodeStreamKey({"ns", "w", 3});
  EXPECT_EQ(StreamLogFields(id), "worker=w namespace=ns dp_rank=3");
  EXPECT_EQ(StreamLogFields(id, LogQuotes::kDouble),
            "worker=\"w\" namespace=\"ns\" dp_rank=3");
  // A rank alone makes a key other than the legacy one.
  EXPECT_EQ(StreamLogFields(EncodeStreamKey({"", "w", 1})),
            "worker=w namespace= dp_rank=1");
}

TEST(StreamLogFieldsTest, ValuesAreEscapedAndCut) {
  const std::string id = EncodeStreamKey({"n\"s", "w\nx", 0});
  EXPECT_EQ(StreamLogFields(id), "worker=w\\x0ax namespace=n\\x22s dp_rank=0");
  EXPECT_EQ(StreamLogFields(EncodeStreamKey({"abcdef", "uvwxyz", 2}),
                            LogQuotes::kNone, 2),
            "worker=uv...(+4 bytes) namespace=ab...(+4 bytes) dp_rank=2");
  // A malformed encoding is a legacy id, shown escaped byte by byte.
  EXPECT_EQ(StreamLogFields(std::string_view("\xFF\x01", 2)),
            "worker=\\xff\\x01");
}

}  // namespace stream_log_fields_test
}  // namespace kvindexer
