// TaskExecutor's bounded queue (server/task_executor.h): a full queue
// refuses at once without running the task, every accepted task runs (in
// order on one thread), the destructor runs the tasks still queued, and
// refusals are counted. A task that waits on a gate holds the executor's
// thread, so the queue fills deterministically; nothing sleeps.
#include "server/task_executor.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/metrics_counter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer::task_executor_test {
namespace {

using namespace std::chrono_literals;

constexpr auto kWaitBound = 10s;

// A gate tasks wait at until it opens, and a count of the tasks that
// reached it.
class Gate {
 public:
  void Pass() {
    std::unique_lock<std::mutex> lock(mu_);
    ++arrived_;
    cv_.notify_all();
    cv_.wait_for(lock, kWaitBound, [&] { return open_; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool WaitForArrivals(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWaitBound, [&] { return arrived_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int arrived_ = 0;
};

// Records the tasks that ran, in order, and lets a test wait for them.
class RunLog {
 public:
  void Ran(int id) {
    std::lock_guard<std::mutex> lock(mu_);
    ran_.push_back(id);
    cv_.notify_all();
  }
  bool WaitForRuns(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWaitBound, [&] { return ran_.size() >= n; });
  }
  std::vector<int> ran() {
    std::lock_guard<std::mutex> lock(mu_);
    return ran_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> ran_;
};

TEST(TaskExecutorTest, AFullQueueRefusesWithoutRunningTheTask) {
  Gate gate;
  RunLog log;
  Counter rejections;
  TaskExecutor executor(1, "test-exec", /*capacity=*/2);
  executor.CountRejectionsInto(&rejections);
  ASSERT_TRUE(executor.TrySubmit([&] {
    gate.Pass();
    log.Ran(0);
  }));
  ASSERT_TRUE(gate.WaitForArrivals(1));  // the thread is held; queue empty
  EXPECT_TRUE(executor.TrySubmit([&] { log.Ran(1); }));
  EXPECT_TRUE(executor.TrySubmit([&] { log.Ran(2); }));
  EXPECT_EQ(executor.depth(), 2u);

  // The refused task is destroyed unrun: its capture is released at once.
  auto witness = std::make_shared<int>(0);
  std::weak_ptr<int> watched = witness;
  EXPECT_FALSE(executor.TrySubmit([&log, witness] { log.Ran(3); }));
  witness.reset();
  EXPECT_TRUE(watched.expired());
  EXPECT_FALSE(executor.TrySubmit([&] { log.Ran(4); }));
  EXPECT_EQ(executor.rejected_total(), 2u);
  EXPECT_EQ(rejections.value(), 2u);
  EXPECT_EQ(executor.depth(), 2u);

  gate.Open();
  ASSERT_TRUE(log.WaitForRuns(3));
  EXPECT_THAT(log.ran(), ::testing::ElementsAre(0, 1, 2));
  // Room again: accepted.
  EXPECT_TRUE(executor.TrySubmit([&] { log.Ran(5); }));
  ASSERT_TRUE(log.WaitForRuns(4));
  EXPECT_THAT(log.ran(), ::testing::ElementsAre(0, 1, 2, 5));
}

// unfinished() counts accepted tasks until each has run to its end: the
// running one and the queued ones, not the refused ones.
TEST(TaskExecutorTest, UnfinishedCountsTasksUntilTheyHaveRun) {
  Gate gate;
  RunLog log;
  TaskExecutor executor(1, "test-exec", /*capacity=*/2);
  EXPECT_EQ(executor.unfinished(), 0u);
  ASSERT_TRUE(executor.TrySubmit([&] {
    gate.Pass();
    log.Ran(0);
  }));
  ASSERT_TRUE(gate.WaitForArrivals(1));
  EXPECT_EQ(executor.unfinished(), 1u);  // running, not queued
  EXPECT_EQ(executor.depth(), 0u);
  EXPECT_TRUE(executor.TrySubmit([&] { log.Ran(1); }));
  EXPECT_TRUE(executor.TrySubmit([&] { log.Ran(2); }));
  EXPECT_FALSE(executor.TrySubmit([&] { log.Ran(3); }));
  EXPECT_EQ(executor.unfinished(), 3u);

  gate.Open();
  ASSERT_TRUE(log.WaitForRuns(3));
  // The count drops once a task has returned, just after it logged.
  const auto until = std::chrono::steady_clock::now() + kWaitBound;
  while (executor.unfinished() != 0 &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::yield();
  }
  EXPECT_EQ(executor.unfinished(), 0u);
}

TEST(TaskExecutorTest, EveryAcceptedTaskRunsInOrder) {
  RunLog log;
  constexpr int kTasks = 1000;
  TaskExecutor executor(1, "test-exec", kTasks);
  for (int i = 0; i < kTasks; ++i) {
    ASSERT_TRUE(executor.TrySubmit([&log, i] { log.Ran(i); }));
  }
  ASSERT_TRUE(log.WaitForRuns(kTasks));
  const std::vector<int> ran = log.ran();
  for (int i = 0; i < kTasks; ++i) EXPECT_EQ(ran[i], i);
  EXPECT_EQ(executor.rejected_total(), 0u);
}

TEST(TaskExecutorTest, SeveralThreadsRunEveryAcceptedTask) {
  Gate gate;
  std::atomic<int> ran{0};
  TaskExecutor executor(3, "test-exec", /*capacity=*/4);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(executor.TrySubmit([&] {
      gate.Pass();
      ran.fetch_add(1);
    }));
  }
  ASSERT_TRUE(gate.WaitForArrivals(3));  // every thread is held
  int accepted = 3;
  while (executor.TrySubmit([&] { ran.fetch_add(1); })) ++accepted;
  EXPECT_EQ(accepted, 3 + 4);
  gate.Open();
  const auto until = std::chrono::steady_clock::now() + kWaitBound;
  while (ran.load() < accepted && std::chrono::steady_clock::now() < until) {
    std::this_thread::yield();
  }
  EXPECT_EQ(ran.load(), accepted);
}

TEST(TaskExecutorTest, TheDestructorRunsTheTasksStillQueued) {
  Gate gate;
  RunLog log;
  {
    TaskExecutor executor(1, "test-exec", /*capacity=*/8);
    ASSERT_TRUE(executor.TrySubmit([&] {
      gate.Pass();
      log.Ran(0);
    }));
    ASSERT_TRUE(gate.WaitForArrivals(1));
    for (int i = 1; i <= 8; ++i) {
      ASSERT_TRUE(executor.TrySubmit([&log, i] { log.Ran(i); }));
    }
    ASSERT_EQ(executor.depth(), 8u);
    // The thread is still held when the destructor begins (or just let
    // go): the queued tasks are there to drain.
    gate.Open();
  }
  EXPECT_THAT(log.ran(), ::testing::ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8));
}

TEST(TaskExecutorTest, CapacityIsAtLeastOne) {
  Gate gate;
  TaskExecutor executor(1, "test-exec", /*capacity=*/0);
  EXPECT_EQ(executor.capacity(), 1u);
  ASSERT_TRUE(executor.TrySubmit([&] { gate.Pass(); }));
  ASSERT_TRUE(gate.WaitForArrivals(1));
  EXPECT_TRUE(executor.TrySubmit([] {}));
  EXPECT_FALSE(executor.TrySubmit([] {}));
  gate.Open();
}

}  // namespace
}  // namespace kvindexer::task_executor_test
