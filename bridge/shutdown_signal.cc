#include "bridge/shutdown_signal.h"

#include <utility>

namespace kvindexer::bridge {

void ShutdownSignal::Trigger() {
  std::function<void()> cancel;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (triggered_) return;
    triggered_ = true;
    cancel = cancel_;
  }
  cv_.notify_all();
  if (cancel) cancel();
}

bool ShutdownSignal::triggered() const {
  std::lock_guard<std::mutex> lock(mu_);
  return triggered_;
}

bool ShutdownSignal::WaitFor(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return triggered_; });
}

void ShutdownSignal::SetCanceller(std::function<void()> cancel) {
  bool run_now = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancel_ = cancel;
    run_now = triggered_;
  }
  if (run_now && cancel) cancel();
}

void ShutdownSignal::ClearCanceller() {
  std::lock_guard<std::mutex> lock(mu_);
  cancel_ = nullptr;
}

}  // namespace kvindexer::bridge
