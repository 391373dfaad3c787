#include "server/deadline_shedder.h"

#include <chrono>
#include <optional>

#include "gtest/gtest.h"
#include "tests/support/fake_clock.h"

namespace kvindexer {
namespace {

using namespace std::chrono_literals;
using std::chrono::nanoseconds;

class DeadlineShedderTest : public ::testing::Test {
 protected:
  // Arrives now with `budget` left until its deadline, then waits `queued`
  // on the fake clock.
  ShedDecision DecideAfter(nanoseconds budget, nanoseconds queued) {
    const WallClock::TimePoint arrival = clock_.Now();
    clock_.Advance(queued);
    return shedder_.DecideByDeadline(arrival, arrival + budget);
  }

  FakeWallClock clock_;
  DeadlineShedder shedder_{clock_};
};

// Behaviour 32 (numbers as in docs/contract.md, "Reference behaviours"):
// 20 ms budget, 60 ms queued -> shed.
TEST_F(DeadlineShedderTest, ShedsWhenQueuedLongerThanBudget) {
  const ShedDecision d = DecideAfter(20ms, 60ms);
  EXPECT_TRUE(d.shed);
  EXPECT_EQ(d.waited, nanoseconds(60ms));
  EXPECT_EQ(d.budget, nanoseconds(20ms));
}

// Behaviour 33: 30 s budget, 10 ms queued -> served.
TEST_F(DeadlineShedderTest, ServesInsideBudget) {
  EXPECT_FALSE(DecideAfter(30s, 10ms).shed);
}

// Behaviour 48: a 100 ms budget ("grpc-timeout: 100m") sheds after 150 ms,
// not after 10 ms.
TEST_F(DeadlineShedderTest, HundredMillisecondBudget) {
  EXPECT_TRUE(DecideAfter(100ms, 150ms).shed);
  EXPECT_FALSE(DecideAfter(100ms, 10ms).shed);
}

TEST_F(DeadlineShedderTest, BoundaryIsInclusive) {
  EXPECT_TRUE(DecideAfter(100ms, 100ms).shed);
  EXPECT_FALSE(DecideAfter(100ms, 100ms - 1ns).shed);
  // A zero budget is always spent.
  EXPECT_TRUE(DecideAfter(0ns, 0ns).shed);
}

// Shed iff now >= deadline.
TEST_F(DeadlineShedderTest, ByDeadlineMatchesNowAtOrPastDeadline) {
  const WallClock::TimePoint arrival = clock_.Now();
  const WallClock::TimePoint deadline = arrival + 20ms;
  clock_.Advance(19ms);
  EXPECT_FALSE(shedder_.DecideByDeadline(arrival, deadline).shed);
  clock_.Advance(1ms);
  EXPECT_TRUE(shedder_.DecideByDeadline(arrival, deadline).shed);
  clock_.Advance(40ms);
  const ShedDecision d = shedder_.DecideByDeadline(arrival, deadline);
  EXPECT_TRUE(d.shed);
  EXPECT_EQ(d.waited, nanoseconds(60ms));
  EXPECT_EQ(d.budget, nanoseconds(20ms));
}

TEST_F(DeadlineShedderTest, ByDeadlineAlreadyPassedAtArrival) {
  // The runtime may have held the call past its deadline before the stamp.
  const WallClock::TimePoint arrival = clock_.Now();
  const ShedDecision d = shedder_.DecideByDeadline(arrival, arrival - 5ms);
  EXPECT_TRUE(d.shed);
  EXPECT_EQ(d.budget, nanoseconds(-5ms));
}

// Behaviour 50: nothing is shed without a deadline (no budget) or without
// an arrival stamp.
TEST_F(DeadlineShedderTest, ByDeadlineInfiniteOrNoArrivalNeverSheds) {
  const WallClock::TimePoint arrival = clock_.Now();
  clock_.Advance(std::chrono::hours(24 * 365));
  EXPECT_FALSE(
      shedder_.DecideByDeadline(arrival, WallClock::TimePoint::max()).shed);
  EXPECT_FALSE(shedder_.DecideByDeadline(std::nullopt, arrival).shed);
  EXPECT_FALSE(
      shedder_.DecideByDeadline(std::nullopt, WallClock::TimePoint::max())
          .shed);
}

TEST_F(DeadlineShedderTest, SaturatesFarFutureDeadlines) {
  // A deadline just below max must not overflow into "past".
  const WallClock::TimePoint arrival = clock_.Now();
  EXPECT_FALSE(
      shedder_.DecideByDeadline(arrival, WallClock::TimePoint::max() - 1s)
          .shed);
  clock_.Set(WallClock::TimePoint::min() + 1s);
  EXPECT_FALSE(
      shedder_.DecideByDeadline(clock_.Now(), WallClock::TimePoint::max() - 1s)
          .shed);
}

}  // namespace
}  // namespace kvindexer
