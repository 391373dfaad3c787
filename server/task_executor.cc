#include "server/task_executor.h"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <latch>
#include <string>
#include <utility>

namespace kvindexer {

TaskExecutor::TaskExecutor(size_t threads, const std::string& thread_name,
                           size_t capacity, int nice_increment)
    : capacity_(std::max<size_t>(capacity, 1)) {
  const size_t n = std::clamp<size_t>(threads, 1, kMaxExecutorThreads);
  // Linux keeps 15 bytes of a thread name and refuses longer ones.
  const std::string name = thread_name.substr(0, 15);
  // Each thread names itself and sets its priority before the constructor
  // returns, so both are in place before the first task is submitted.
  const int base_nice = getpriority(PRIO_PROCESS, 0);
  std::latch started(static_cast<std::ptrdiff_t>(n));
  threads_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    threads_.emplace_back([this, &name, &started, base_nice, nice_increment] {
      pthread_setname_np(pthread_self(), name.c_str());
      // Linux: a nice value is per thread. Raising it needs no privilege;
      // if it fails the thread just keeps the process's priority.
      if (nice_increment > 0) {
        (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()),
                          base_nice + nice_increment);
      }
      started.count_down();
      Run();
    });
  }
  started.wait();
}

TaskExecutor::~TaskExecutor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread& t : threads_) t.join();
}

bool TaskExecutor::TrySubmit(std::function<void()> task) {
  Queued queued{.task = std::move(task), .submitted = {}};
  if (wait_.load(std::memory_order_relaxed) != nullptr) {
    queued.submitted = std::chrono::steady_clock::now();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (tasks_.size() >= capacity_) {
      rejected_.fetch_add(1, std::memory_order_relaxed);
      if (Counter* c = rejections_.load(std::memory_order_relaxed)) {
        c->Increment();
      }
      return false;  // `queued` and its task are destroyed unrun
    }
    tasks_.push_back(std::move(queued));
    unfinished_.fetch_add(1, std::memory_order_release);
  }
  ready_.notify_one();
  return true;
}

size_t TaskExecutor::depth() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tasks_.size();
}

void TaskExecutor::Run() {
  for (;;) {
    Queued queued;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, and everything has run
      queued = std::move(tasks_.front());
      tasks_.pop_front();
    }
    if (Histogram* wait = wait_.load(std::memory_order_relaxed);
        wait != nullptr &&
        queued.submitted != std::chrono::steady_clock::time_point{}) {
      wait->ObserveDuration(std::chrono::steady_clock::now() -
                            queued.submitted);
    }
    queued.task();
    unfinished_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace kvindexer
