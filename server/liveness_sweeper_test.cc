// LivenessSweeper schedules sweeps and stops promptly. What a sweep does is
// tested in core/indexer_liveness_test.cc with a fake clock.
#include "server/liveness_sweeper.h"

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "gtest/gtest.h"

namespace kvindexer {
namespace {

using namespace std::chrono_literals;

// Bound on the wait for sweeps; the test never sleeps to synchronise.
constexpr auto kWaitBound = 10s;

class SweepCounter {
 public:
  void Count() {
    std::lock_guard<std::mutex> lock(mu_);
    ++count_;
    counted_.notify_all();
  }
  bool WaitFor(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return counted_.wait_for(lock, kWaitBound, [&] { return count_ >= n; });
  }
  int count() {
    std::lock_guard<std::mutex> lock(mu_);
    return count_;
  }

 private:
  std::mutex mu_;
  std::condition_variable counted_;
  int count_ = 0;
};

TEST(LivenessSweeperTest, SweepsRepeatedlyUntilStopped) {
  SweepCounter counter;
  LivenessSweeper sweeper(1ms, [&counter] { counter.Count(); });
  EXPECT_TRUE(counter.WaitFor(3));
  sweeper.Stop();
  const int after_stop = counter.count();
  sweeper.Stop();  // a second Stop is harmless
  EXPECT_EQ(counter.count(), after_stop);
}

// With an hour between sweeps, Stop must not wait for the period: were it
// to, this test would hang until ctest's timeout.
TEST(LivenessSweeperTest, StopDoesNotWaitForThePeriod) {
  SweepCounter counter;
  {
    LivenessSweeper sweeper(1h, [&counter] { counter.Count(); });
  }
  EXPECT_EQ(counter.count(), 0);
}

}  // namespace
}  // namespace kvindexer
