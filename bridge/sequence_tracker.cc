#include "bridge/sequence_tracker.h"

namespace kvindexer::bridge {

SequenceTracker::Observation SequenceTracker::Observe(uint64_t seq,
                                                      Clock::time_point now) {
  Observation obs;
  if (!last_) {
    last_ = seq;
    return obs;
  }
  obs.expected = *last_ + 1;            // wraps at 2^64
  const uint64_t delta = seq - *last_;  // modular distance
  last_ = seq;
  if (delta == 1) {
    obs.verdict = Verdict::kContiguous;
    return obs;
  }
  if (delta == 0) {
    obs.verdict = Verdict::kDuplicate;
    ++duplicates_;
  } else if (delta < (uint64_t{1} << 63)) {
    obs.verdict = Verdict::kGap;
    obs.missing = delta - 1;
    ++gaps_;
    missing_ += obs.missing;
  } else {
    obs.verdict = Verdict::kReorder;
    ++reorders_;
  }
  if (!last_log_ || now - *last_log_ >= log_interval_) {
    obs.log_now = true;
    obs.suppressed = suppressed_;
    suppressed_ = 0;
    last_log_ = now;
  } else {
    ++suppressed_;
  }
  return obs;
}

}  // namespace kvindexer::bridge
