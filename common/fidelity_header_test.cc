#include "common/fidelity_header.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kvindexer {
// Named rather than anonymous: CI compiles test files in batches (unity
// builds), where anonymous namespaces of neighbouring files merge.
namespace fidelity_header_test {

using Kind = FidelityHeader::Kind;

TEST(FidelityHeaderTest, Exact) {
  for (const char* text : {"exact", " exact ", "exact  "}) {
    const FidelityHeader h = FidelityHeader::Parse(text);
    EXPECT_EQ(h.kind, Kind::kValid) << text;
    EXPECT_EQ(h.fidelity, Fidelity::kExact) << text;
    EXPECT_EQ(h.reason, "") << text;
  }
}

TEST(FidelityHeaderTest, DegradedWithOrWithoutAReason) {
  for (const auto& [text, reason] :
       {std::pair<const char*, const char*>{"degraded", ""},
        {"degraded;", ""},
        {"degraded; no_history", "no_history"},
        {"degraded;gap_unrepaired", "gap_unrepaired"},
        {"  degraded ;  a b  ", ""},  // a space before ';' is malformed
        {"degraded; a; b", "a; b"}}) {
    const FidelityHeader h = FidelityHeader::Parse(text);
    if (std::string(text) == "  degraded ;  a b  ") {
      EXPECT_EQ(h.kind, Kind::kMalformed) << text;
      continue;
    }
    EXPECT_EQ(h.kind, Kind::kValid) << text;
    EXPECT_EQ(h.fidelity, Fidelity::kDegraded) << text;
    EXPECT_EQ(h.reason, reason) << text;
  }
}

TEST(FidelityHeaderTest, EverythingElseIsMalformed) {
  for (const char* bad :
       {"", " ", "Exact", "EXACT", "exacty", "exact; x", "degradedx",
        "degraded no", "perfect", "1", "degraded; a\tb"}) {
    const FidelityHeader h = FidelityHeader::Parse(bad);
    EXPECT_EQ(h.kind, Kind::kMalformed) << bad;
    EXPECT_EQ(h.value, bad);
  }
  const std::string long_value(500, 'x');
  EXPECT_EQ(FidelityHeader::Parse(long_value).value.size(),
            FidelityHeader::kMaxKeptValueBytes);
}

TEST(FidelityHeaderTest, LongReasonsAreCut) {
  const std::string reason(500, 'r');
  const FidelityHeader h = FidelityHeader::Parse("degraded; " + reason);
  EXPECT_EQ(h.kind, Kind::kValid);
  EXPECT_EQ(h.reason.size(), FidelityHeader::kMaxReasonBytes);
}

TEST(FidelityHeaderTest, FormatRoundTrips) {
  EXPECT_EQ(FidelityHeader::Format(""), "exact");
  EXPECT_EQ(FidelityHeader::Format("no_history"), "degraded; no_history");
  for (const std::string& reason :
       std::vector<std::string>{"", "no_history", "snapshot_truncated", "a\nb",
                                std::string(300, 'z')}) {
    const FidelityHeader h =
        FidelityHeader::Parse(FidelityHeader::Format(reason));
    ASSERT_EQ(h.kind, Kind::kValid) << reason;
    EXPECT_EQ(h.fidelity,
              reason.empty() ? Fidelity::kExact : Fidelity::kDegraded);
  }
}

}  // namespace fidelity_header_test
}  // namespace kvindexer
