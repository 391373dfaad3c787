#include "durable/replay_bound.h"

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "gtest/gtest.h"
#include "tests/support/fake_clock.h"
#include "tests/support/wait_until.h"

namespace kvindexer::durable {
namespace {

using std::chrono::seconds;

// Bounded: a wait that cannot end fails the test instead of hanging it.
bool EventuallyStalled(const ReplayBound& bound) {
  return test_support::WaitUntil([&] { return bound.figures().stalled; },
                                 seconds(30), std::chrono::milliseconds(1));
}

class ReplayBoundTest : public ::testing::Test {
 protected:
  FakeMonotonicClock clock_;
};

TEST_F(ReplayBoundTest, WithoutABoundNothingWaits) {
  ReplayBound bound(0, &clock_);
  bound.Rotated(1000);
  int calls = 0;
  EXPECT_FALSE(bound.WaitForRoom(1000, 1000, [&] { ++calls; }));
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(bound.figures().stalls, 0u);
}

TEST_F(ReplayBoundTest, TheTailCountsClosedAndCurrentFiles) {
  ReplayBound bound(10'000, &clock_);
  bound.SetClosedBytes(300);
  bound.Appended(200);
  EXPECT_EQ(bound.figures().tail_bytes, 500u);
  EXPECT_EQ(bound.figures().max_bytes, 10'000u);
  bound.Rotated(250);  // the current file closes with 250 record bytes
  EXPECT_EQ(bound.figures().tail_bytes, 550u);
  bound.Appended(40);
  EXPECT_EQ(bound.figures().tail_bytes, 590u);
  bound.BuildEnded(/*covered=*/false);  // a failed build covers nothing
  EXPECT_EQ(bound.figures().tail_bytes, 590u);
  bound.Rotated(40);
  bound.BuildEnded(/*covered=*/true);  // every closed file leaves the tail
  EXPECT_EQ(bound.figures().tail_bytes, 0u);
}

TEST_F(ReplayBoundTest, AWriteWithinTheBoundPasses) {
  ReplayBound bound(1000, &clock_);
  bound.Rotated(600);
  EXPECT_FALSE(bound.WaitForRoom(300, 100, nullptr));  // exactly at it
  EXPECT_EQ(bound.figures().stalls, 0u);
}

TEST_F(ReplayBoundTest, AWriteOverTheBoundWithNoBuildPasses) {
  // Nothing would shrink the tail: waiting would be for ever.
  ReplayBound bound(1000, &clock_);
  bound.SetClosedBytes(900);
  EXPECT_FALSE(bound.WaitForRoom(100, 100, nullptr));
  bound.Rotated(100);
  bound.BuildEnded(/*covered=*/true);
  bound.Appended(1500);
  EXPECT_FALSE(bound.WaitForRoom(1500, 100, nullptr));
}

TEST_F(ReplayBoundTest, AWriteOverTheBoundWaitsForTheBuildToEnd) {
  ReplayBound bound(1000, &clock_);
  bound.Rotated(600);
  std::atomic<int> hurried{0};
  auto waited = std::async(std::launch::async, [&] {
    return bound.WaitForRoom(350, 100, [&] { ++hurried; });
  });
  ASSERT_TRUE(EventuallyStalled(bound));
  EXPECT_EQ(waited.wait_for(std::chrono::milliseconds(0)),
            std::future_status::timeout);
  // on_stall runs just after the write is counted as stalled.
  const auto give_up = std::chrono::steady_clock::now() + seconds(30);
  while (hurried.load() == 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::yield();
  }
  EXPECT_EQ(hurried.load(), 1);
  EXPECT_EQ(bound.figures().stalls, 1u);
  clock_.Advance(seconds(3));
  bound.BuildEnded(/*covered=*/true);
  EXPECT_TRUE(waited.get());
  const ReplayBoundFigures after = bound.figures();
  EXPECT_FALSE(after.stalled);
  EXPECT_EQ(after.stalls, 1u);
  EXPECT_DOUBLE_EQ(after.stall_seconds, 3.0);
  EXPECT_EQ(after.tail_bytes, 0u);
}

TEST_F(ReplayBoundTest, AFailedBuildReleasesWritesUntilOneSucceeds) {
  ReplayBound bound(1000, &clock_);
  bound.Rotated(600);
  auto waited = std::async(
      std::launch::async, [&] { return bound.WaitForRoom(450, 100, nullptr); });
  ASSERT_TRUE(EventuallyStalled(bound));
  bound.BuildEnded(/*covered=*/false);
  EXPECT_TRUE(waited.get());
  // The next build runs while the last one failed: writes are not held.
  bound.Rotated(450);
  EXPECT_FALSE(bound.WaitForRoom(0, 100, nullptr));
  bound.BuildEnded(/*covered=*/true);
  bound.Appended(0);
  bound.Rotated(900);
  auto again = std::async(std::launch::async,
                          [&] { return bound.WaitForRoom(50, 100, nullptr); });
  ASSERT_TRUE(EventuallyStalled(bound));
  bound.BuildEnded(/*covered=*/true);
  EXPECT_TRUE(again.get());
  EXPECT_EQ(bound.figures().stalls, 2u);
}

TEST_F(ReplayBoundTest, StopWakesAWaitingWriteAndLetsLaterOnesPass) {
  ReplayBound bound(1000, &clock_);
  bound.Rotated(900);
  auto waited = std::async(std::launch::async,
                           [&] { return bound.WaitForRoom(50, 100, nullptr); });
  ASSERT_TRUE(EventuallyStalled(bound));
  bound.Stop();
  EXPECT_TRUE(waited.get());
  EXPECT_FALSE(bound.WaitForRoom(500, 100, nullptr));
}

}  // namespace
}  // namespace kvindexer::durable
