#include "bridge/snapshot_limiter.h"

namespace kvindexer::bridge {

bool SnapshotLimiter::Acquire(RecoveryClock* clock,
                              std::chrono::milliseconds recheck) {
  std::unique_lock<std::mutex> lock(mu_);
  ++waiting_;
  while (held_ >= limit_) {
    if (clock->Stopping()) {
      --waiting_;
      return false;
    }
    freed_.wait_for(lock, recheck);
  }
  --waiting_;
  ++held_;
  return true;
}

void SnapshotLimiter::Release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --held_;
  }
  freed_.notify_one();
}

size_t SnapshotLimiter::held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

size_t SnapshotLimiter::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_;
}

}  // namespace kvindexer::bridge
