#include "server/liveness_sweeper.h"

#include <pthread.h>

#include <utility>

namespace kvindexer {

LivenessSweeper::LivenessSweeper(std::chrono::milliseconds period,
                                 std::function<void()> sweep)
    : period_(period), sweep_(std::move(sweep)) {
  thread_ = std::thread([this] { Run(); });
}

LivenessSweeper::~LivenessSweeper() { Stop(); }

void LivenessSweeper::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LivenessSweeper::Run() {
  pthread_setname_np(pthread_self(), "kvidx-liveness");
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    // Scheduling, not synchronisation: the timeout is the sweep period.
    if (wake_.wait_for(lock, period_, [this] { return stopping_; })) return;
    lock.unlock();
    sweep_();
    lock.lock();
  }
}

}  // namespace kvindexer
