#include "server/clock.h"

namespace kvindexer {
namespace {

class SystemClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::system_clock::now(); }
};

}  // namespace

const Clock& Clock::Real() {
  static const SystemClock* const clock = new SystemClock();
  return *clock;
}

}  // namespace kvindexer
