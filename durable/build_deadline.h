// BuildDeadline: when a checkpoint build is abandoned (docs/durability.md,
// "Checkpoints"): the store is closing, or the build has run longer than
// its timeout (KV_INDEXER_CHECKPOINT_TIMEOUT_MS) on the store's clock. A
// build in a thread asks at each of its checks (between records and
// checkpoint parts) and stops at the first yes; the server asks while it
// waits for a builder process, and kills the process at the first yes.
//
// Thread safety: every method may be called from any thread.
#ifndef KVINDEXER_DURABLE_BUILD_DEADLINE_H_
#define KVINDEXER_DURABLE_BUILD_DEADLINE_H_

#include <atomic>
#include <chrono>
#include <string>

#include "common/clock.h"

namespace kvindexer::durable {

class BuildDeadline {
 public:
  // Never expires: the build of a builder process, which the server ends.
  BuildDeadline() = default;
  // Expires once `closing` is true, or once `timeout` has passed on `clock`
  // from now. REQUIRES: `closing` and `clock` outlive the deadline.
  BuildDeadline(const std::atomic<bool>* closing, const MonotonicClock* clock,
                std::chrono::milliseconds timeout);
  BuildDeadline(const BuildDeadline&) = delete;
  BuildDeadline& operator=(const BuildDeadline&) = delete;

  // True once the build must stop. The first call that finds the timeout
  // passed (and the store not closing) makes timed_out() true for good.
  bool Expired() const;
  bool timed_out() const { return timed_out_.load(std::memory_order_relaxed); }
  // Stops the build at its next check, neither timed out nor closing: an
  // idle build in a thread that is to start over at normal priority.
  // Resume() clears it for the build that starts over, which keeps the
  // timeout counted from the first.
  void Abandon() const { abandoned_.store(true, std::memory_order_relaxed); }
  void Resume() const { abandoned_.store(false, std::memory_order_relaxed); }
  bool abandoned() const { return abandoned_.load(std::memory_order_relaxed); }
  // Why Expired said yes, for messages: "the store is closing" or "it ran
  // longer than its timeout of <n> ms".
  std::string Why() const;
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  const std::atomic<bool>* closing_ = nullptr;
  const MonotonicClock* clock_ = nullptr;  // null: no timeout
  std::chrono::milliseconds timeout_{0};
  MonotonicClock::TimePoint deadline_{};
  mutable std::atomic<bool> timed_out_{false};
  mutable std::atomic<bool> abandoned_{false};
};

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_BUILD_DEADLINE_H_
