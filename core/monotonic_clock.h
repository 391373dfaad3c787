// MonotonicClock: the time source of worker liveness (heartbeat deadlines and
// sweeps; docs/contract.md, "Recovery > Worker liveness and removal").
// Injectable so that tests move time without sleeping.
//
// The base is std::chrono::steady_clock: a deadline must not move when the
// wall clock is set. (Deadline shedding uses server/clock.h instead, whose
// base is the wall clock because gRPC reports deadlines in it.)
//
// Thread safety: Now() may be called concurrently from any thread.
#ifndef KVINDEXER_CORE_MONOTONIC_CLOCK_H_
#define KVINDEXER_CORE_MONOTONIC_CLOCK_H_

#include <chrono>

namespace kvindexer {

class MonotonicClock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  virtual ~MonotonicClock() = default;
  virtual TimePoint Now() const = 0;

  // The process-wide real clock (std::chrono::steady_clock). Never
  // destroyed.
  static const MonotonicClock& Real();
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_MONOTONIC_CLOCK_H_
