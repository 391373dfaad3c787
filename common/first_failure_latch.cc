#include "common/first_failure_latch.h"

#include <utility>

namespace kvindexer {

std::optional<FirstFailureLatch::Callback> FirstFailureLatch::Trip(
    std::string failure) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failed_.load(std::memory_order_relaxed)) return std::nullopt;
  failure_ = std::move(failure);
  failed_.store(true, std::memory_order_release);
  return callback_;
}

std::optional<std::string> FirstFailureLatch::Failure() const {
  if (!failed_.load(std::memory_order_acquire)) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

void FirstFailureLatch::SetCallback(Callback callback) {
  std::string failure;
  bool failed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    callback_ = callback;
    failed = failed_.load(std::memory_order_relaxed);
    if (failed) failure = failure_;
  }
  if (failed && callback != nullptr) callback(failure);
}

}  // namespace kvindexer
