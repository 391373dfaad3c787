// LogSilence (replica/log_silence.h) with a fake clock: the bound is
// exceeded only strictly beyond it, every answer starts the count again,
// answers out of order do not move it back, the reason names the variable,
// and zero turns the rule off.
#include "replica/log_silence.h"

#include <chrono>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fake_clock.h"

namespace kvindexer::replica {
// Named rather than anonymous: unity builds merge anonymous namespaces.
namespace log_silence_test {

using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(LogSilenceTest, ExceededOnlyBeyondTheBound) {
  FakeMonotonicClock clock;
  LogSilence silence(1000ms, clock.Now());
  EXPECT_TRUE(silence.enabled());
  EXPECT_FALSE(silence.Exceeded(clock.Now()));
  clock.Advance(1000ms);
  EXPECT_FALSE(silence.Exceeded(clock.Now()));
  EXPECT_EQ(silence.Reason(clock.Now()), std::nullopt);
  EXPECT_EQ(silence.Since(clock.Now()), 1000ms);
  clock.Advance(1ms);
  EXPECT_TRUE(silence.Exceeded(clock.Now()));
  ASSERT_TRUE(silence.Reason(clock.Now()).has_value());
  EXPECT_THAT(*silence.Reason(clock.Now()),
              AllOf(HasSubstr("no answer from the fleet event log for 1001 ms"),
                    HasSubstr("KV_INDEXER_FLEET_MAX_SILENCE_MS=1000")));
}

TEST(LogSilenceTest, AnAnswerStartsTheCountAgain) {
  FakeMonotonicClock clock;
  LogSilence silence(1000ms, clock.Now());
  clock.Advance(5s);
  ASSERT_TRUE(silence.Exceeded(clock.Now()));
  silence.Heard(clock.Now());
  EXPECT_FALSE(silence.Exceeded(clock.Now()));
  EXPECT_EQ(silence.Since(clock.Now()), 0ms);
  clock.Advance(600ms);
  silence.Heard(clock.Now());
  clock.Advance(600ms);
  EXPECT_FALSE(silence.Exceeded(clock.Now()));
  EXPECT_EQ(silence.Since(clock.Now()), 600ms);
}

TEST(LogSilenceTest, AnEarlierAnswerDoesNotMoveTheCountBack) {
  FakeMonotonicClock clock;
  LogSilence silence(1000ms, clock.Now());
  const auto early = clock.Now();
  clock.Advance(800ms);
  silence.Heard(clock.Now());
  silence.Heard(early);
  clock.Advance(800ms);
  EXPECT_FALSE(silence.Exceeded(clock.Now()));
  EXPECT_EQ(silence.Since(clock.Now()), 800ms);
  // A time before the latest answer is no silence at all.
  EXPECT_EQ(silence.Since(early), 0ms);
}

TEST(LogSilenceTest, SinceRoundsUp) {
  FakeMonotonicClock clock;
  LogSilence silence(1000ms, clock.Now());
  clock.Advance(1000ms + 1us);
  EXPECT_TRUE(silence.Exceeded(clock.Now()));
  EXPECT_EQ(silence.Since(clock.Now()), 1001ms);
}

TEST(LogSilenceTest, ZeroTurnsTheRuleOff) {
  FakeMonotonicClock clock;
  LogSilence silence(0ms, clock.Now());
  EXPECT_FALSE(silence.enabled());
  clock.Advance(std::chrono::hours(24 * 365));
  EXPECT_FALSE(silence.Exceeded(clock.Now()));
  EXPECT_EQ(silence.Reason(clock.Now()), std::nullopt);
  // The silence is still measured.
  EXPECT_GT(silence.Since(clock.Now()), 1000ms);
}

}  // namespace log_silence_test
}  // namespace kvindexer::replica
