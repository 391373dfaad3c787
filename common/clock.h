// ClockOf<Base>: an injectable time source, so that code with deadlines,
// TTLs, sweeps or backoff can be tested without sleeping. Two instances are
// used, named for their base:
//
//   MonotonicClock  std::chrono::steady_clock. Worker liveness (heartbeat
//                   deadlines and sweeps), lease and snapshot timing:
//                   anything that must not move when the wall clock is set.
//   WallClock       std::chrono::system_clock. Deadline shedding, because
//                   gRPC reports a call's absolute deadline in wall time
//                   (grpc::ServerContext::deadline()).
//
// Tests use FakeClockOf (tests/support/fake_clock.h), which moves only when
// told to.
//
// Thread safety: Now() may be called concurrently from any thread.
#ifndef KVINDEXER_COMMON_CLOCK_H_
#define KVINDEXER_COMMON_CLOCK_H_

#include <chrono>

namespace kvindexer {

template <typename Base>
class ClockOf {
 public:
  using TimePoint = typename Base::time_point;
  using Duration = typename Base::duration;

  virtual ~ClockOf() = default;
  virtual TimePoint Now() const = 0;

  // The process-wide real clock (Base::now()). Never destroyed.
  static const ClockOf& Real();
};

using MonotonicClock = ClockOf<std::chrono::steady_clock>;
using WallClock = ClockOf<std::chrono::system_clock>;

namespace clock_internal {

template <typename Base>
class RealClock final : public ClockOf<Base> {
 public:
  typename ClockOf<Base>::TimePoint Now() const override { return Base::now(); }
};

}  // namespace clock_internal

template <typename Base>
const ClockOf<Base>& ClockOf<Base>::Real() {
  static const auto* const clock = new clock_internal::RealClock<Base>();
  return *clock;
}

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_CLOCK_H_
