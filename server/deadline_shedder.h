// DeadlineShedder: decides whether a prefix query has already spent its
// caller's budget while waiting inside the server (docs/contract.md,
// "MatchExternalKvPrefix > Deadline shedding").
//
// Rule: shed iff the request has an arrival stamp, the caller supplied a
// budget, and (now - arrival) >= budget. A budget of 0 is therefore always
// spent. Without an arrival stamp or without a budget nothing is shed, however
// long the request waited.
//
// The service sees only the absolute deadline gRPC computed from grpc-timeout
// when the request's headers arrived. DecideByDeadline applies the equivalent
// rule "now >= deadline", where an infinite deadline means "no deadline".
//
// Thread safety: const methods; safe to call concurrently. The clock must be
// thread-safe (every Clock is).
#ifndef KVINDEXER_SERVER_DEADLINE_SHEDDER_H_
#define KVINDEXER_SERVER_DEADLINE_SHEDDER_H_

#include <chrono>
#include <optional>

#include "common/clock.h"

namespace kvindexer {

struct ShedDecision {
  bool shed = false;
  // How long the request waited since its arrival stamp, and the budget it
  // had at that stamp. Meaningful only when shed is true (for the log line).
  std::chrono::nanoseconds waited{0};
  std::chrono::nanoseconds budget{0};
};

class DeadlineShedder {
 public:
  // REQUIRES: clock outlives the shedder. OWNERSHIP: not taken.
  explicit DeadlineShedder(const WallClock& clock) : clock_(&clock) {}

  // WallClock::TimePoint::max() is "no deadline".
  [[nodiscard]] ShedDecision DecideByDeadline(
      std::optional<WallClock::TimePoint> arrival,
      WallClock::TimePoint deadline) const;

  const WallClock& clock() const { return *clock_; }

 private:
  const WallClock* clock_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_DEADLINE_SHEDDER_H_
