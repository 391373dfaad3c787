// Reconnect backoff (docs/bridge-events.md,
// "Sending and errors > Reconnect backoff"): 500 ms, doubling, capped at 10 s,
// back to 500 ms after a successful connect.
//
// Thread safety: not thread-safe.
#ifndef KVINDEXER_BRIDGE_BACKOFF_H_
#define KVINDEXER_BRIDGE_BACKOFF_H_

#include <chrono>

namespace kvindexer::bridge {

class Backoff {
 public:
  using Duration = std::chrono::milliseconds;

  explicit Backoff(Duration initial = Duration(500),
                   Duration cap = Duration(10000))
      : initial_(initial), cap_(cap), next_(initial) {}

  // The delay to wait before the next attempt; each call doubles the
  // following one, up to the cap.
  Duration NextDelay() {
    const Duration delay = next_;
    next_ = next_ * 2 > cap_ ? cap_ : next_ * 2;
    return delay;
  }

  // The delay NextDelay() returns next, without advancing.
  Duration Peek() const { return next_; }

  // Call after a successful connect.
  void Reset() { next_ = initial_; }

 private:
  const Duration initial_;
  const Duration cap_;
  Duration next_;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_BACKOFF_H_
