// FakeMonotonicClock: a MonotonicClock for tests that moves only when told
// to. Test-only.
#ifndef KVINDEXER_CORE_FAKE_MONOTONIC_CLOCK_H_
#define KVINDEXER_CORE_FAKE_MONOTONIC_CLOCK_H_

#include <atomic>

#include "core/monotonic_clock.h"

namespace kvindexer {

class FakeMonotonicClock final : public MonotonicClock {
 public:
  explicit FakeMonotonicClock(
      TimePoint start = TimePoint(std::chrono::hours(1)))
      : now_(start) {}

  TimePoint Now() const override { return now_.load(); }
  void Set(TimePoint t) { now_.store(t); }
  void Advance(Duration d) { now_.store(now_.load() + d); }

 private:
  std::atomic<TimePoint> now_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_FAKE_MONOTONIC_CLOCK_H_
