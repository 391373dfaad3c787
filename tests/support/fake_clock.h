// FakeClockOf<Base>: a ClockOf<Base> (common/clock.h) that moves only when
// told to. Test-only.
//
// Thread safety: every method may be called concurrently.
#ifndef KVINDEXER_TESTS_SUPPORT_FAKE_CLOCK_H_
#define KVINDEXER_TESTS_SUPPORT_FAKE_CLOCK_H_

#include <atomic>
#include <chrono>

#include "common/clock.h"

namespace kvindexer {

template <typename Base>
class FakeClockOf final : public ClockOf<Base> {
 public:
  using TimePoint = typename ClockOf<Base>::TimePoint;
  using Duration = typename ClockOf<Base>::Duration;

  explicit FakeClockOf(TimePoint start = TimePoint(std::chrono::hours(1)))
      : now_(start) {}

  TimePoint Now() const override { return now_.load(); }
  void Set(TimePoint t) { now_.store(t); }
  void Advance(Duration d) { now_.store(now_.load() + d); }

 private:
  std::atomic<TimePoint> now_;
};

using FakeMonotonicClock = FakeClockOf<std::chrono::steady_clock>;
using FakeWallClock = FakeClockOf<std::chrono::system_clock>;

}  // namespace kvindexer

#endif  // KVINDEXER_TESTS_SUPPORT_FAKE_CLOCK_H_
