#include "common/log_setup.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spdlog/spdlog.h"

namespace kvindexer {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

TEST(LogSetupTest, ParsesEveryLevelInAnyCaseAndTrimmed) {
  EXPECT_EQ(ParseLogLevel("trace").value(), spdlog::level::trace);
  EXPECT_EQ(ParseLogLevel("debug").value(), spdlog::level::debug);
  EXPECT_EQ(ParseLogLevel("info").value(), spdlog::level::info);
  EXPECT_EQ(ParseLogLevel("warn").value(), spdlog::level::warn);
  EXPECT_EQ(ParseLogLevel("warning").value(), spdlog::level::warn);
  EXPECT_EQ(ParseLogLevel("error").value(), spdlog::level::err);
  EXPECT_EQ(ParseLogLevel("critical").value(), spdlog::level::critical);
  EXPECT_EQ(ParseLogLevel("off").value(), spdlog::level::off);
  EXPECT_EQ(ParseLogLevel("WARN").value(), spdlog::level::warn);
  EXPECT_EQ(ParseLogLevel(" Debug\t").value(), spdlog::level::debug);
}

TEST(LogSetupTest, RejectsOtherNamesNamingVariableValueAndAccepted) {
  for (const char* bad :
       {"", " ", "verbose", "err", "warn ing", "5", "in fo"}) {
    const auto level = ParseLogLevel(bad);
    ASSERT_FALSE(level.ok()) << bad;
    EXPECT_EQ(level.status().code(), absl::StatusCode::kInvalidArgument);
  }
  const auto level = ParseLogLevel("loud");
  ASSERT_FALSE(level.ok());
  EXPECT_THAT(std::string(level.status().message()),
              AllOf(HasSubstr("KV_INDEXER_LOG_LEVEL=\"loud\" is invalid"),
                    HasSubstr("trace, debug, info, warn, error, critical, off"),
                    HasSubstr("warning")));
}

TEST(LogSetupTest, LoadDefaultsToInfoWhenUnsetOrBlank) {
  EXPECT_EQ(LoadLogLevel(MapEnvironment({})).value(), spdlog::level::info);
  EXPECT_EQ(
      LoadLogLevel(MapEnvironment({{"KV_INDEXER_LOG_LEVEL", ""}})).value(),
      spdlog::level::info);
  EXPECT_EQ(
      LoadLogLevel(MapEnvironment({{"KV_INDEXER_LOG_LEVEL", " \t"}})).value(),
      spdlog::level::info);
  EXPECT_EQ(LoadLogLevel(MapEnvironment({{"KV_INDEXER_LOG_LEVEL", " ERROR "}}))
                .value(),
            spdlog::level::err);
  const auto bad =
      LoadLogLevel(MapEnvironment({{"KV_INDEXER_LOG_LEVEL", "x"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("KV_INDEXER_LOG_LEVEL=\"x\""));
}

TEST(LogSetupTest, OneLineFormatInUtcOnStderr) {
  // Started before the logger exists, so that its sink sees no terminal and
  // writes no colour codes.
  ::testing::internal::CaptureStderr();
  SetUpLogging("common-test", spdlog::level::debug);
  spdlog::debug("hello {}", 1);
  spdlog::trace("below the threshold");
  spdlog::warn("careful");
  const std::string output = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(spdlog::default_logger()->name(), "common-test");
  const std::string timestamp =
      "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6}Z";
  EXPECT_THAT(output, MatchesRegex(timestamp + " debug hello 1\n" + timestamp +
                                   " warning careful\n"));
}

TEST(LogSetupTest, SettingUpTwiceReplacesTheDefaultLogger) {
  SetUpLogging("first");
  SetUpLogging("second", spdlog::level::err);
  EXPECT_EQ(spdlog::default_logger()->name(), "second");
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::err);
}

}  // namespace
}  // namespace kvindexer
