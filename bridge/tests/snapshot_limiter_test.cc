// KV_INDEXER_SNAPSHOT_CONCURRENCY's limiter: no more permits than the
// limit are held, a waiter gets one when one is given back, and a waiter
// leaves without one once its clock says stop. Waits are on conditions
// with deadlines, never on sleeps.
#include "bridge/snapshot_limiter.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"
#include "tests/support/wait_until.h"

namespace kvindexer::bridge {
namespace snapshot_limiter_test {

using namespace std::chrono_literals;
using ::kvindexer::test_support::WaitUntil;

class FlagClock final : public RecoveryClock {
 public:
  Clock::time_point Now() override { return Clock::now(); }
  bool WaitFor(std::chrono::milliseconds) override { return Stopping(); }
  bool Stopping() override { return stop.load(); }
  std::atomic<bool> stop{false};
};

TEST(SnapshotLimiter, AWaiterGetsThePermitAGivenBackOne) {
  SnapshotLimiter limiter(2);
  FlagClock clock;
  ASSERT_TRUE(limiter.Acquire(&clock));
  ASSERT_TRUE(limiter.Acquire(&clock));
  EXPECT_EQ(limiter.held(), 2u);
  std::atomic<bool> acquired{false};
  std::thread waiter([&] { acquired = limiter.Acquire(&clock, 5ms); });
  ASSERT_TRUE(WaitUntil([&] { return limiter.waiting() == 1; }, 10s, 1ms));
  EXPECT_FALSE(acquired.load());
  EXPECT_EQ(limiter.held(), 2u);
  limiter.Release();
  ASSERT_TRUE(WaitUntil([&] { return acquired.load(); }, 10s, 1ms));
  waiter.join();
  EXPECT_EQ(limiter.held(), 2u);
  EXPECT_EQ(limiter.waiting(), 0u);
}

TEST(SnapshotLimiter, AWaiterLeavesWithoutAPermitOnStop) {
  SnapshotLimiter limiter(1);
  FlagClock clock;
  ASSERT_TRUE(limiter.Acquire(&clock));
  std::atomic<int> outcome{-1};
  std::thread waiter([&] { outcome = limiter.Acquire(&clock, 5ms) ? 1 : 0; });
  ASSERT_TRUE(WaitUntil([&] { return limiter.waiting() == 1; }, 10s, 1ms));
  clock.stop = true;
  waiter.join();
  EXPECT_EQ(outcome.load(), 0);
  EXPECT_EQ(limiter.held(), 1u);
}

// Many threads through a limit of 3: never more than 3 inside at once.
TEST(SnapshotLimiter, NeverMoreThanTheLimitInside) {
  SnapshotLimiter limiter(3);
  FlagClock clock;
  std::atomic<int> inside{0};
  std::atomic<int> most{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        ASSERT_TRUE(limiter.Acquire(&clock, 1ms));
        const int now = ++inside;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::yield();
        --inside;
        limiter.Release();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_LE(most.load(), 3);
  EXPECT_GE(most.load(), 1);
  EXPECT_EQ(limiter.held(), 0u);
}

}  // namespace snapshot_limiter_test
}  // namespace kvindexer::bridge
