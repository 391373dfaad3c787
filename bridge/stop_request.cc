#include "bridge/stop_request.h"

#include <utility>

namespace kvindexer::bridge {

void StopRequest::Trigger() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (triggered_) return;
    triggered_ = true;
  }
  cv_.notify_all();
  // Held while the canceller runs, so ClearCanceller() (and with it the
  // end of the cancelled RPC's context) waits until it has returned.
  std::lock_guard<std::mutex> cancel_lock(cancel_mu_);
  if (cancel_) cancel_();
}

bool StopRequest::triggered() const {
  std::lock_guard<std::mutex> lock(mu_);
  return triggered_;
}

bool StopRequest::WaitFor(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return triggered_; });
}

void StopRequest::SetCanceller(std::function<void()> cancel) {
  std::lock_guard<std::mutex> cancel_lock(cancel_mu_);
  cancel_ = std::move(cancel);
  if (triggered() && cancel_) cancel_();
}

void StopRequest::ClearCanceller() {
  std::lock_guard<std::mutex> cancel_lock(cancel_mu_);
  cancel_ = nullptr;
}

}  // namespace kvindexer::bridge
