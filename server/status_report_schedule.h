// StatusSchedule: when one router's next status report is due. Ticks fall
// every interval from the first one, whatever the posts do; a tick that
// comes while the previous post is still pending is skipped (counted, not
// sent late), so a slow router gets at most one post in flight and the
// ticks after it stay in phase.
//
// Thread safety: none; one router's thread owns it.
#ifndef KVINDEXER_SERVER_STATUS_REPORT_SCHEDULE_H_
#define KVINDEXER_SERVER_STATUS_REPORT_SCHEDULE_H_

#include <cstdint>

#include "common/clock.h"

namespace kvindexer {

class StatusSchedule {
 public:
  using TimePoint = MonotonicClock::TimePoint;
  using Duration = MonotonicClock::Duration;

  // REQUIRES: interval > 0.
  StatusSchedule(TimePoint first, Duration interval)
      : due_(first), interval_(interval) {}

  // The tick to post at next.
  TimePoint due() const { return due_; }

  // The post of the tick due() ended at `now`: due() moves to the first
  // tick after `now`. Returns the ticks skipped, those that fell in
  // (due(), now] while the post was pending.
  uint64_t Finish(TimePoint now) {
    if (now < due_ + interval_) {
      due_ += interval_;
      return 0;
    }
    const auto skipped = static_cast<uint64_t>((now - due_) / interval_);
    due_ += interval_ * static_cast<int64_t>(skipped + 1);
    return skipped;
  }

 private:
  TimePoint due_;
  const Duration interval_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_STATUS_REPORT_SCHEDULE_H_
