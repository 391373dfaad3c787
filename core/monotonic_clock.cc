#include "core/monotonic_clock.h"

namespace kvindexer {
namespace {

class SteadyClock final : public MonotonicClock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
};

}  // namespace

const MonotonicClock& MonotonicClock::Real() {
  static const SteadyClock* const clock = new SteadyClock();
  return *clock;
}

}  // namespace kvindexer
