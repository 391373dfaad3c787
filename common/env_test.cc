#include "common/env.h"

#include <stdlib.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr std::string_view kVar = "KV_INDEXER_COMMON_TEST_VARIABLE";
constexpr Uint32Syntax kPositive{.min = 1};

std::string ErrorOf(const absl::StatusOr<uint32_t>& parsed) {
  EXPECT_FALSE(parsed.ok());
  if (parsed.ok()) return {};
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(parsed.status().message());
}

TEST(EnvTest, ProcessEnvironmentReadsSetUnsetAndEmpty) {
  const std::string name(kVar);
  ASSERT_EQ(unsetenv(name.c_str()), 0);
  const EnvLookup env = ProcessEnvironment();
  EXPECT_EQ(env(kVar), std::nullopt);
  ASSERT_EQ(setenv(name.c_str(), "", 1), 0);
  EXPECT_EQ(env(kVar), "");
  ASSERT_EQ(setenv(name.c_str(), " a b ", 1), 0);
  EXPECT_EQ(env(kVar), " a b ");
  ASSERT_EQ(unsetenv(name.c_str()), 0);
  EXPECT_EQ(env(std::string_view("PATH\0X", 6)), std::nullopt);
}

TEST(EnvTest, MapEnvironmentHoldsExactlyItsVariables) {
  const EnvLookup env = MapEnvironment({{"A", "1"}, {"EMPTY", ""}});
  EXPECT_EQ(env("A"), "1");
  EXPECT_EQ(env("EMPTY"), "");
  EXPECT_EQ(env("B"), std::nullopt);
  EXPECT_EQ(env("a"), std::nullopt);
}

TEST(EnvTest, LookupTrimmedTreatsBlankAsUnset) {
  const EnvLookup env =
      MapEnvironment({{"SPACED", " \t x y \n"}, {"BLANK", " \t "}, {"E", ""}});
  EXPECT_EQ(LookupTrimmed(env, "SPACED"), "x y");
  EXPECT_EQ(LookupTrimmed(env, "BLANK"), std::nullopt);
  EXPECT_EQ(LookupTrimmed(env, "E"), std::nullopt);
  EXPECT_EQ(LookupTrimmed(env, "UNSET"), std::nullopt);
}

TEST(EnvTest, QuoteEscapesWhatIsNotPrintableAscii) {
  EXPECT_EQ(QuoteEnvValue("abc"), "\"abc\"");
  EXPECT_EQ(QuoteEnvValue(""), "\"\"");
  EXPECT_EQ(QuoteEnvValue("6\xff"), "\"6\\xff\"");
  EXPECT_EQ(QuoteEnvValue("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
}

TEST(EnvTest, ErrorsNameTheVariableQuoteTheValueAndSayWhatIsAccepted) {
  const absl::Status plain = InvalidEnvValue("VAR", "bad", "a number");
  EXPECT_EQ(plain.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(plain.message(), "VAR=\"bad\" is invalid: expected a number");

  const absl::Status because =
      InvalidEnvValueBecause("LIST", "a,zz", "unknown item \"zz\"", "a or b");
  EXPECT_EQ(because.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(because.message(),
            "LIST=\"a,zz\" is invalid: unknown item \"zz\"; expected a or b");
}

TEST(EnvTest, Utf8) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_FALSE(IsValidUtf8("\xc3"));              // truncated
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate U+D800
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
}

TEST(EnvTest, Uint32AcceptsDigitsWithinRange) {
  EXPECT_EQ(ParseEnvUint32(kVar, "0", {}, "n").value(), 0u);
  EXPECT_EQ(ParseEnvUint32(kVar, "007", {}, "n").value(), 7u);
  EXPECT_EQ(ParseEnvUint32(kVar, "4294967295", {}, "n").value(), 4294967295u);
  EXPECT_EQ(ParseEnvUint32(kVar, "1", kPositive, "n").value(), 1u);
  EXPECT_EQ(ParseEnvUint32(kVar, "10", {.max = 10}, "n").value(), 10u);
  EXPECT_EQ(ParseEnvUint32(kVar, "+12", {.allow_plus_sign = true}, "n").value(),
            12u);
}

TEST(EnvTest, Uint32RejectsEverythingElse) {
  for (const char* bad : {"", " 1", "1 ", "-1", "+", "+1", "1.5", "0x10", "one",
                          "4294967296", "99999999999999999999"}) {
    EXPECT_FALSE(ParseEnvUint32(kVar, bad, {}, "n").ok()) << bad;
  }
  EXPECT_FALSE(ParseEnvUint32(kVar, "0", kPositive, "n").ok());
  EXPECT_FALSE(ParseEnvUint32(kVar, "11", {.max = 10}, "n").ok());
  EXPECT_FALSE(ParseEnvUint32(kVar, "+", {.allow_plus_sign = true}, "n").ok());
  EXPECT_FALSE(
      ParseEnvUint32(kVar, "++1", {.allow_plus_sign = true}, "n").ok());
}

TEST(EnvTest, Uint32ErrorsNameTheVariableValueAndAccepted) {
  EXPECT_EQ(
      ErrorOf(ParseEnvUint32(kVar, "0", kPositive, "a positive integer")),
      std::string(kVar) + "=\"0\" is invalid: expected a positive integer");
  EXPECT_THAT(ErrorOf(ParseEnvUint32(kVar, "many", {}, "an integer")),
              AllOf(HasSubstr(kVar), HasSubstr("\"many\""),
                    HasSubstr("expected an integer")));
  EXPECT_THAT(
      ErrorOf(ParseEnvUint32(kVar, "6\xff", {}, "an integer")),
      AllOf(HasSubstr(kVar), HasSubstr("\"6\\xff\""),
            HasSubstr("not valid UTF-8"), HasSubstr("expected an integer")));
}

}  // namespace
}  // namespace kvindexer
