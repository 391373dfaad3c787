#include "durable/build_deadline.h"

#include <atomic>
#include <chrono>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fake_clock.h"

namespace kvindexer::durable {
namespace build_deadline_test {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

TEST(BuildDeadlineTest, ADefaultDeadlineNeverExpires) {
  const BuildDeadline never;
  EXPECT_FALSE(never.Expired());
  EXPECT_FALSE(never.timed_out());
}

TEST(BuildDeadlineTest, ExpiresWhenTheTimeoutHasPassedOnItsClock) {
  FakeMonotonicClock clock;
  const std::atomic<bool> closing{false};
  const BuildDeadline deadline(&closing, &clock, 600'000ms);
  clock.Advance(599'999ms);
  EXPECT_FALSE(deadline.Expired());
  EXPECT_FALSE(deadline.timed_out());
  clock.Advance(1ms);
  EXPECT_TRUE(deadline.Expired());
  EXPECT_TRUE(deadline.timed_out());
  EXPECT_EQ(deadline.Why(), "it ran longer than its timeout of 600000 ms");
  // Once timed out, always: a clock read later cannot take it back.
  clock.Set(FakeMonotonicClock::TimePoint{});
  EXPECT_TRUE(deadline.Expired());
}

TEST(BuildDeadlineTest, AbandonExpiresItUntilResumedAndKeepsTheTimeout) {
  FakeMonotonicClock clock;
  const std::atomic<bool> closing{false};
  const BuildDeadline deadline(&closing, &clock, 1000ms);
  deadline.Abandon();
  EXPECT_TRUE(deadline.abandoned());
  EXPECT_TRUE(deadline.Expired());
  EXPECT_FALSE(deadline.timed_out());
  EXPECT_THAT(deadline.Why(), HasSubstr("abandoned"));
  deadline.Resume();
  EXPECT_FALSE(deadline.abandoned());
  EXPECT_FALSE(deadline.Expired());
  // The build that starts over has what is left of the first's time.
  clock.Advance(1000ms);
  EXPECT_TRUE(deadline.Expired());
  EXPECT_TRUE(deadline.timed_out());
}

TEST(BuildDeadlineTest, ClosingExpiresItWithoutATimeout) {
  FakeMonotonicClock clock;
  std::atomic<bool> closing{false};
  const BuildDeadline deadline(&closing, &clock, 1000ms);
  closing.store(true);
  EXPECT_TRUE(deadline.Expired());
  EXPECT_FALSE(deadline.timed_out());
  EXPECT_THAT(deadline.Why(), HasSubstr("closing"));
}

}  // namespace build_deadline_test
}  // namespace kvindexer::durable
