#include "server/grpc_timeout.h"

#include <chrono>
#include <optional>
#include <string_view>

#include "gtest/gtest.h"

namespace kvindexer {
namespace {

using namespace std::chrono_literals;

// Behaviour 46 (docs/contract.md, "Reference behaviours"): every unit parses.
TEST(GrpcTimeoutTest, EveryUnitParses) {
  EXPECT_EQ(ParseGrpcTimeout("1H"), std::chrono::nanoseconds(3600s));
  EXPECT_EQ(ParseGrpcTimeout("2M"), std::chrono::nanoseconds(120s));
  EXPECT_EQ(ParseGrpcTimeout("3S"), std::chrono::nanoseconds(3s));
  EXPECT_EQ(ParseGrpcTimeout("100m"), std::chrono::nanoseconds(100ms));
  EXPECT_EQ(ParseGrpcTimeout("250u"), std::chrono::nanoseconds(250us));
  EXPECT_EQ(ParseGrpcTimeout("400n"), std::chrono::nanoseconds(400ns));
}

TEST(GrpcTimeoutTest, ZeroAndLeadingZerosParse) {
  EXPECT_EQ(ParseGrpcTimeout("0m"), std::chrono::nanoseconds(0));
  EXPECT_EQ(ParseGrpcTimeout("0007S"), std::chrono::nanoseconds(7s));
  EXPECT_EQ(ParseGrpcTimeout("1500m"), std::chrono::nanoseconds(1500ms));
  EXPECT_EQ(ParseGrpcTimeout("2500000u"), std::chrono::nanoseconds(2500ms));
  EXPECT_EQ(ParseGrpcTimeout("3000000001n"),
            std::chrono::nanoseconds(3'000'000'001));
}

// Behaviour 47: unparsable values and an absent header mean no deadline.
TEST(GrpcTimeoutTest, UnparsableValuesMeanNoDeadline) {
  for (const std::string_view value :
       {"", "m", "100", "100x", "abcm", "99999999999999999999H", " 1S", "1S ",
        "-1S", "+1S", "1.5S", "1SS", "1h", "1s"}) {
    EXPECT_EQ(ParseGrpcTimeout(value), std::nullopt) << '"' << value << '"';
  }
  EXPECT_EQ(ParseGrpcTimeoutHeader(std::nullopt), std::nullopt);
  EXPECT_EQ(ParseGrpcTimeoutHeader(std::string_view("5S")),
            std::chrono::nanoseconds(5s));
}

TEST(GrpcTimeoutTest, OverflowBoundaries) {
  // The largest uint64 count parses for every unit that needs no multiply.
  EXPECT_NE(ParseGrpcTimeout("18446744073709551615n"), std::nullopt);
  EXPECT_NE(ParseGrpcTimeout("18446744073709551615S"), std::nullopt);
  // One more does not fit in uint64.
  EXPECT_EQ(ParseGrpcTimeout("18446744073709551616n"), std::nullopt);
  // H and M whose conversion to seconds overflows uint64.
  EXPECT_EQ(ParseGrpcTimeout("5124095576030432H"), std::nullopt);
  EXPECT_EQ(ParseGrpcTimeout("307445734561825861M"), std::nullopt);
  // Just below the H overflow: fits in uint64 seconds, saturates the budget.
  EXPECT_EQ(ParseGrpcTimeout("5124095576030431H"),
            std::chrono::nanoseconds::max());
  // The 8-digit wire maximum is exact.
  EXPECT_EQ(ParseGrpcTimeout("99999999H"),
            std::chrono::nanoseconds::max());  // > 292 years
  EXPECT_EQ(ParseGrpcTimeout("99999999S"),
            std::chrono::nanoseconds(std::chrono::seconds(99999999)));
}

}  // namespace
}  // namespace kvindexer
