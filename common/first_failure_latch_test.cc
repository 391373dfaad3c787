#include "common/first_failure_latch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace kvindexer {
namespace first_failure_latch_test {

// A callback that counts its calls and keeps the last failure it got.
struct Recorder {
  std::atomic<int> calls{0};
  std::string last;  // written by the one call the tests expect

  FirstFailureLatch::Callback Callback() {
    return [this](const std::string& failure) {
      last = failure;
      calls.fetch_add(1);
    };
  }
};

// Calls what Trip handed out, as a monitor does.
void Deliver(const std::optional<FirstFailureLatch::Callback>& first,
             const std::string& failure) {
  if (first.has_value() && *first != nullptr) (*first)(failure);
}

TEST(FirstFailureLatchTest, NothingIsKeptBeforeAFailure) {
  FirstFailureLatch latch;
  EXPECT_FALSE(latch.failed());
  EXPECT_EQ(latch.Failure(), std::nullopt);
}

TEST(FirstFailureLatchTest, TheFirstFailureIsKeptAndLaterOnesDropped) {
  FirstFailureLatch latch;
  EXPECT_TRUE(latch.Trip("disk gone").has_value());
  EXPECT_FALSE(latch.Trip("second").has_value());
  EXPECT_FALSE(latch.Trip("third").has_value());
  EXPECT_TRUE(latch.failed());
  EXPECT_EQ(latch.Failure(), "disk gone");
}

TEST(FirstFailureLatchTest, ACallbackSetBeforeIsHandedOutOnce) {
  FirstFailureLatch latch;
  Recorder recorder;
  latch.SetCallback(recorder.Callback());
  EXPECT_EQ(recorder.calls.load(), 0);

  const std::optional<FirstFailureLatch::Callback> first = latch.Trip("boom");
  ASSERT_TRUE(first.has_value());
  ASSERT_NE(*first, nullptr);
  Deliver(first, "boom");
  Deliver(latch.Trip("again"), "again");

  EXPECT_EQ(recorder.calls.load(), 1);
  EXPECT_EQ(recorder.last, "boom");
}

TEST(FirstFailureLatchTest, ACallbackSetAfterTheFailureIsCalledAtOnce) {
  FirstFailureLatch latch;
  const std::optional<FirstFailureLatch::Callback> first = latch.Trip("boom");
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(*first, nullptr);  // none was set

  Recorder recorder;
  latch.SetCallback(recorder.Callback());
  EXPECT_EQ(recorder.calls.load(), 1);
  EXPECT_EQ(recorder.last, "boom");

  Deliver(latch.Trip("again"), "again");
  EXPECT_EQ(recorder.calls.load(), 1);
}

TEST(FirstFailureLatchTest, AClearedCallbackIsNotHandedOut) {
  FirstFailureLatch latch;
  Recorder recorder;
  latch.SetCallback(recorder.Callback());
  latch.SetCallback(nullptr);
  const std::optional<FirstFailureLatch::Callback> first = latch.Trip("boom");
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(*first, nullptr);
  latch.SetCallback(nullptr);  // after the failure: nothing to call
  EXPECT_EQ(recorder.calls.load(), 0);
}

TEST(FirstFailureLatchTest, ConcurrentFailuresKeepTheOneThatWasFirst) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 50;
  for (int round = 0; round < kRounds; ++round) {
    FirstFailureLatch latch;
    Recorder recorder;
    latch.SetCallback(recorder.Callback());
    std::latch start(kThreads);
    std::atomic<int> handed_out{0};
    std::vector<std::string> winner(kThreads);
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        const std::string failure = "failure " + std::to_string(i);
        start.arrive_and_wait();
        const std::optional<FirstFailureLatch::Callback> first =
            latch.Trip(failure);
        if (first.has_value()) {
          handed_out.fetch_add(1);
          winner[i] = failure;
        }
        Deliver(first, failure);
      });
    }
    for (std::thread& t : threads) t.join();

    ASSERT_EQ(handed_out.load(), 1) << "round " << round;
    std::string kept;
    for (const std::string& w : winner) kept += w;
    EXPECT_EQ(latch.Failure(), kept) << "round " << round;
    EXPECT_EQ(recorder.calls.load(), 1) << "round " << round;
    EXPECT_EQ(recorder.last, kept) << "round " << round;
  }
}

TEST(FirstFailureLatchTest, ACallbackSetDuringTheFailureIsCalledExactlyOnce) {
  constexpr int kRounds = 200;
  for (int round = 0; round < kRounds; ++round) {
    FirstFailureLatch latch;
    Recorder recorder;
    std::latch start(2);
    std::thread setter([&] {
      start.arrive_and_wait();
      latch.SetCallback(recorder.Callback());
    });
    std::thread failer([&] {
      start.arrive_and_wait();
      Deliver(latch.Trip("boom"), "boom");
    });
    setter.join();
    failer.join();
    EXPECT_EQ(recorder.calls.load(), 1) << "round " << round;
    EXPECT_EQ(recorder.last, "boom") << "round " << round;
  }
}

}  // namespace first_failure_latch_test
}  // namespace kvindexer
