// TaskExecutor: a fixed set of named threads that run submitted tasks in
// submission order (FIFO; with several threads, tasks may overlap).
//
// Why it exists: gRPC C++ 1.51 runs callback handlers on a small shared pool
// (two threads on a two-core machine). Work that takes long or waits (a
// prefix scan, a 16,384-hash apply, a lookup waiting for a backend's lock)
// would occupy one of those threads, and while it does, other calls queue
// behind it: the server could neither reject surplus prefix queries at once
// nor serve a prefix query while an apply runs (docs/contract.md,
// "MatchExternalKvPrefix > Admission control"). So
// the service does the cheap checks on the callback thread and hands the rest
// to an executor (see kv_indexer_service.h for which executor runs what).
//
// No thread is created per task.
//
// The queue is bounded: TrySubmit refuses a task, at once and without
// running it, when `capacity` tasks are already waiting (the tasks running
// on the threads do not count). The caller answers the refusal (the
// services say RESOURCE_EXHAUSTED, naming the queue and its variable); a
// task that was accepted always runs, also when the executor is destroyed.
//
// For the metrics (docs/metrics.md) an executor reports its queue depth and,
// once asked to, how long each task waited in the queue and how many tasks
// it refused; without a wait histogram a task costs no clock read.
//
// Thread safety: TrySubmit and depth may be called concurrently from any
// thread. The destructor runs every task already accepted, then joins the
// threads.
#ifndef KVINDEXER_SERVER_TASK_EXECUTOR_H_
#define KVINDEXER_SERVER_TASK_EXECUTOR_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/metrics_counter.h"
#include "common/metrics_histogram.h"

namespace kvindexer {

inline constexpr size_t kMaxExecutorThreads = 256;

class TaskExecutor {
 public:
  // Starts min(threads, kMaxExecutorThreads) threads, at least one, named
  // `thread_name` (truncated to the 15 bytes Linux keeps), with a queue of
  // at most max(capacity, 1) waiting tasks. A positive `nice_increment`
  // lowers the threads' CPU priority by that many nice levels below the
  // calling thread's.
  TaskExecutor(size_t threads, const std::string& thread_name, size_t capacity,
               int nice_increment = 0);
  ~TaskExecutor();
  TaskExecutor(const TaskExecutor&) = delete;
  TaskExecutor& operator=(const TaskExecutor&) = delete;

  // Queues `task` to run on one of the threads and returns true; or, when
  // `capacity()` tasks are already waiting, returns false at once and
  // destroys `task` without running it (counted, see CountRejectionsInto).
  // Tasks must not throw.
  [[nodiscard]] bool TrySubmit(std::function<void()> task);

  size_t capacity() const { return capacity_; }
  // Tasks accepted and not yet started. Takes the queue lock.
  size_t depth() const;
  // Tasks accepted and not yet finished (waiting or running): 0 when every
  // task accepted before the call has finished.
  size_t unfinished() const {
    return unfinished_.load(std::memory_order_acquire);
  }
  // Tasks refused so far.
  uint64_t rejected_total() const {
    return rejected_.load(std::memory_order_relaxed);
  }
  // From now on each task's time in the queue is observed into `wait`.
  // REQUIRES: called before the first Submit; `wait` outlives the executor.
  void ObserveWaitsInto(Histogram* wait) {
    wait_.store(wait, std::memory_order_relaxed);
  }
  // From now on each refused task also increments `rejections`.
  // REQUIRES: `rejections` outlives the executor.
  void CountRejectionsInto(Counter* rejections) {
    rejections_.store(rejections, std::memory_order_relaxed);
  }

 private:
  struct Queued {
    std::function<void()> task;
    // Set only while a wait histogram is attached.
    std::chrono::steady_clock::time_point submitted;
  };

  void Run();

  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable ready_;
  std::deque<Queued> tasks_;  // guarded by mu_; at most capacity_
  std::atomic<Histogram*> wait_{nullptr};
  std::atomic<Counter*> rejections_{nullptr};
  std::atomic<uint64_t> rejected_{0};
  std::atomic<size_t> unfinished_{0};
  bool stopping_ = false;  // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_TASK_EXECUTOR_H_
