#include "durable/build_deadline.h"

#include "absl/strings/str_cat.h"

namespace kvindexer::durable {

BuildDeadline::BuildDeadline(const std::atomic<bool>* closing,
                             const MonotonicClock* clock,
                             std::chrono::milliseconds timeout)
    : closing_(closing),
      clock_(clock),
      timeout_(timeout),
      deadline_(clock->Now() + timeout) {}

bool BuildDeadline::Expired() const {
  if (closing_ != nullptr && closing_->load(std::memory_order_relaxed)) {
    return true;
  }
  if (timed_out() || abandoned()) return true;
  if (clock_ == nullptr || clock_->Now() < deadline_) return false;
  timed_out_.store(true, std::memory_order_relaxed);
  return true;
}

std::string BuildDeadline::Why() const {
  if (closing_ != nullptr && closing_->load(std::memory_order_relaxed)) {
    return "the store is closing";
  }
  if (timed_out()) {
    return absl::StrCat("it ran longer than its timeout of ", timeout_.count(),
                        " ms");
  }
  if (abandoned()) return "it was abandoned, to start over at normal priority";
  return "it was stopped";
}

}  // namespace kvindexer::durable
