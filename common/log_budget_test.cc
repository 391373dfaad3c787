#include "common/log_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/fake_clock.h"

namespace kvindexer {
namespace log_budget_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using Level = spdlog::level::level_enum;

constexpr std::chrono::milliseconds kRefill{1000};

// Admits lines until the budget refuses one; returns how many it admitted.
int AdmitUntilRefused(LogBudget& budget) {
  int admitted = 0;
  while (budget.Admit().log) ++admitted;
  return admitted;
}

TEST(LogBudgetTest, ABurstUpToTheSizeIsAdmittedWhole) {
  FakeMonotonicClock clock;
  LogBudget budget(&clock, 3, kRefill);
  for (int i = 0; i < 3; ++i) {
    const LogBudget::Admission a = budget.Admit();
    EXPECT_TRUE(a.log);
    EXPECT_EQ(a.suppressed, 0u);
  }
  EXPECT_FALSE(budget.Admit().log);
  EXPECT_EQ(budget.suppressed_total(), 1u);
}

TEST(LogBudgetTest, OneTokenComesBackPerRefillInterval) {
  FakeMonotonicClock clock;
  LogBudget budget(&clock, 3, kRefill);
  ASSERT_EQ(AdmitUntilRefused(budget), 3);
  clock.Advance(kRefill - std::chrono::milliseconds(1));
  EXPECT_FALSE(budget.Admit().log);
  clock.Advance(std::chrono::milliseconds(1));
  EXPECT_EQ(AdmitUntilRefused(budget), 1);
  // Two and a half intervals: two tokens; the half carries over.
  clock.Advance(2 * kRefill + kRefill / 2);
  EXPECT_EQ(AdmitUntilRefused(budget), 2);
  clock.Advance(kRefill / 2);
  EXPECT_EQ(AdmitUntilRefused(budget), 1);
}

TEST(LogBudgetTest, NeverHoldsMoreThanTheBurst) {
  FakeMonotonicClock clock;
  LogBudget budget(&clock, 3, kRefill);
  clock.Advance(std::chrono::hours(24 * 365));
  EXPECT_EQ(AdmitUntilRefused(budget), 3);
  // Time spent full earned nothing: the next token is a whole interval away.
  clock.Advance(kRefill / 2);
  EXPECT_FALSE(budget.Admit().log);
}

TEST(LogBudgetTest, TheNextAdmittedLineReportsWhatWasDropped) {
  FakeMonotonicClock clock;
  LogBudget budget(&clock, 1, kRefill);
  ASSERT_TRUE(budget.Admit().log);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(budget.Admit().log);
  clock.Advance(kRefill);
  const LogBudget::Admission a = budget.Admit();
  EXPECT_TRUE(a.log);
  EXPECT_EQ(a.suppressed, 5u);
  clock.Advance(kRefill);
  EXPECT_EQ(budget.Admit().suppressed, 0u);
  EXPECT_EQ(budget.suppressed_total(), 5u);
}

TEST(LogBudgetTest, LogWithinBudgetWritesTheSummaryBeforeTheLine) {
  FakeMonotonicClock clock;
  LogBudget budget(&clock, 2, kRefill);
  std::vector<std::pair<Level, std::string>> lines;
  const LogLineSink sink = [&](Level level, std::string_view line) {
    lines.emplace_back(level, std::string(line));
  };
  // A client cycling through 1,000 worker ids within one interval.
  for (int i = 0; i < 1000; ++i) {
    LogWithinBudget(&budget, sink, spdlog::level::warn,
                    "gap worker=w" + std::to_string(i));
  }
  EXPECT_THAT(lines, ElementsAre(Pair(spdlog::level::warn, "gap worker=w0"),
                                 Pair(spdlog::level::warn, "gap worker=w1")));
  clock.Advance(kRefill);
  LogWithinBudget(&budget, sink, spdlog::level::info, "removed worker=z");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[2].first, spdlog::level::warn);
  EXPECT_EQ(lines[2].second,
            "998 similar lines suppressed (per-worker log lines: at most 2 at "
            "once, then one per 1000 ms)");
  EXPECT_THAT(lines[3], Pair(spdlog::level::info, "removed worker=z"));
}

TEST(LogBudgetTest, NoBudgetAdmitsEveryLine) {
  int lines = 0;
  for (int i = 0; i < 1000; ++i) {
    LogWithinBudget(
        nullptr, [&](Level, std::string_view) { ++lines; }, spdlog::level::warn,
        "x");
  }
  EXPECT_EQ(lines, 1000);
}

TEST(LogBudgetTest, TheProcessBudgetHasTheDocumentedShape) {
  EXPECT_EQ(PerWorkerLogBudget().burst(), kPerWorkerLogBurst);
  EXPECT_EQ(PerWorkerLogBudget().refill(), kPerWorkerLogRefill);
  EXPECT_THAT(SuppressedLinesLine(7, PerWorkerLogBudget()),
              HasSubstr("7 similar lines suppressed (per-worker log lines: at "
                        "most 100 at once, then one per 1000 ms)"));
}

}  // namespace log_budget_test
}  // namespace kvindexer
