// Decides whether a repeated warning may be logged now: the first occurrence
// always, later ones at most once per interval, reporting how many were
// suppressed in between. Keeps a misbehaving publisher from flooding logs.
//
// Thread safety: not thread-safe.
#ifndef KVINDEXER_BRIDGE_LOG_THROTTLE_H_
#define KVINDEXER_BRIDGE_LOG_THROTTLE_H_

#include <chrono>
#include <cstdint>
#include <optional>

namespace kvindexer::bridge {

class LogThrottle {
 public:
  using Clock = std::chrono::steady_clock;

  explicit LogThrottle(Clock::duration interval = std::chrono::seconds(10))
      : interval_(interval) {}

  // Returns the number of suppressed occurrences since the last allowed one
  // when this occurrence should be logged, or nullopt to stay quiet.
  std::optional<uint64_t> Allow(Clock::time_point now) {
    if (last_ && now - *last_ < interval_) {
      ++suppressed_;
      return std::nullopt;
    }
    last_ = now;
    const uint64_t suppressed = suppressed_;
    suppressed_ = 0;
    return suppressed;
  }

 private:
  Clock::duration interval_;
  std::optional<Clock::time_point> last_;
  uint64_t suppressed_ = 0;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_LOG_THROTTLE_H_
