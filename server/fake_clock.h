// FakeClock: a Clock for tests that moves only when told to. Test-only.
#ifndef KVINDEXER_SERVER_FAKE_CLOCK_H_
#define KVINDEXER_SERVER_FAKE_CLOCK_H_

#include <atomic>

#include "server/clock.h"

namespace kvindexer {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimePoint start = TimePoint(std::chrono::hours(1)))
      : now_(start) {}

  TimePoint Now() const override { return now_.load(); }
  void Set(TimePoint t) { now_.store(t); }
  void Advance(Duration d) { now_.store(now_.load() + d); }

 private:
  std::atomic<TimePoint> now_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_FAKE_CLOCK_H_
