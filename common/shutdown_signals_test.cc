#include "common/shutdown_signals.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <future>

#include "gtest/gtest.h"

namespace kvindexer {
namespace {

// Generous bound on waits that end within microseconds; only a broken watcher
// reaches it.
constexpr auto kBound = std::chrono::seconds(30);

bool IsPending(int signal_number) {
  sigset_t pending;
  sigemptyset(&pending);
  EXPECT_EQ(sigpending(&pending), 0);
  return sigismember(&pending, signal_number) == 1;
}

TEST(ShutdownSignalsTest, WaitTakesABlockedSignalRaisedEarlier) {
  const ShutdownSignals signals = ShutdownSignals::Block();
  ASSERT_TRUE(signals.active()) << signals.error();
  EXPECT_TRUE(signals.error().empty());

  // Blocked, so the signal stays pending instead of ending the process.
  ASSERT_EQ(raise(SIGTERM), 0);
  EXPECT_TRUE(IsPending(SIGTERM));
  EXPECT_EQ(signals.Wait(), SIGTERM);
  EXPECT_FALSE(IsPending(SIGTERM));

  ASSERT_EQ(raise(SIGINT), 0);
  EXPECT_EQ(signals.Wait(), SIGINT);
}

TEST(ShutdownSignalsTest, TakePendingNeverWaits) {
  const ShutdownSignals signals = ShutdownSignals::Block();
  ASSERT_TRUE(signals.active()) << signals.error();
  EXPECT_EQ(signals.TakePending(), std::nullopt);

  // Two different signals raised together: Wait takes one, TakePending the
  // other, and nothing is left.
  ASSERT_EQ(raise(SIGTERM), 0);
  ASSERT_EQ(raise(SIGINT), 0);
  const std::optional<int> first = signals.Wait();
  ASSERT_TRUE(first.has_value());
  const std::optional<int> second = signals.TakePending();
  ASSERT_TRUE(second.has_value());
  EXPECT_NE(*first, *second);
  EXPECT_EQ(signals.TakePending(), std::nullopt);
  EXPECT_FALSE(IsPending(SIGTERM));
  EXPECT_FALSE(IsPending(SIGINT));
}

TEST(ShutdownSignalsTest, InactiveWaitReturnsAtOnce) {
  const ShutdownSignals inactive;  // never blocked anything
  EXPECT_FALSE(inactive.active());
  EXPECT_EQ(inactive.Wait(), std::nullopt);
  EXPECT_EQ(inactive.TakePending(), std::nullopt);
}

TEST(ShutdownSignalsTest, SignalNames) {
  EXPECT_EQ(SignalName(SIGINT), "SIGINT");
  EXPECT_EQ(SignalName(SIGTERM), "SIGTERM");
  EXPECT_EQ(SignalName(SIGHUP), "signal " + std::to_string(SIGHUP));
}

TEST(ShutdownSignalWatcherTest, CallsBackOnceWithAProcessSignal) {
  const ShutdownSignals signals = ShutdownSignals::Block();
  ASSERT_TRUE(signals.active()) << signals.error();
  std::promise<int> received;
  std::future<int> future = received.get_future();
  ShutdownSignalWatcher watcher(signals, [&received](int signal_number) {
    received.set_value(signal_number);
  });
  // Process-directed: every thread has it blocked, so only the watcher's
  // sigwait can take it.
  ASSERT_EQ(kill(getpid(), SIGINT), 0);
  ASSERT_EQ(future.wait_for(kBound), std::future_status::ready);
  EXPECT_EQ(future.get(), SIGINT);
}

TEST(ShutdownSignalWatcherTest, DestroyedWithoutASignalNeverCallsBack) {
  const ShutdownSignals signals = ShutdownSignals::Block();
  ASSERT_TRUE(signals.active()) << signals.error();
  bool called = false;
  {
    ShutdownSignalWatcher watcher(signals, [&called](int) { called = true; });
  }  // joins; the wake-up signal went to the watcher's thread only
  EXPECT_FALSE(called);
  EXPECT_FALSE(IsPending(SIGTERM));
  EXPECT_FALSE(IsPending(SIGINT));
}

TEST(ShutdownSignalWatcherTest, InactiveSignalsNeverCallBack) {
  const ShutdownSignals inactive;
  bool called = false;
  {
    ShutdownSignalWatcher watcher(inactive, [&called](int) { called = true; });
  }
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace kvindexer
