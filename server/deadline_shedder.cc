#include "server/deadline_shedder.h"

namespace kvindexer {
namespace {

using std::chrono::nanoseconds;

// a - b in nanoseconds, saturating instead of overflowing (time points near
// TimePoint::max() stand for "far future").
nanoseconds SaturatingDiff(WallClock::TimePoint a, WallClock::TimePoint b) {
  const auto x = std::chrono::duration_cast<nanoseconds>(a.time_since_epoch());
  const auto y = std::chrono::duration_cast<nanoseconds>(b.time_since_epoch());
  nanoseconds::rep out = 0;
  if (__builtin_sub_overflow(x.count(), y.count(), &out)) {
    return x > y ? nanoseconds::max() : nanoseconds::min();
  }
  return nanoseconds(out);
}

}  // namespace

ShedDecision DeadlineShedder::DecideByDeadline(
    std::optional<WallClock::TimePoint> arrival,
    WallClock::TimePoint deadline) const {
  if (!arrival.has_value() || deadline == WallClock::TimePoint::max())
    return {};
  // The budget left at the arrival stamp. It may already be negative when the
  // request waited in the transport before it was stamped.
  const nanoseconds budget = SaturatingDiff(deadline, *arrival);
  const nanoseconds waited = SaturatingDiff(clock_->Now(), *arrival);
  return {.shed = waited >= budget, .waited = waited, .budget = budget};
}

}  // namespace kvindexer
