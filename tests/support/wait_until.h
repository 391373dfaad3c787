// WaitUntil: bounded polling for a condition that another thread or process
// makes true. A wait that cannot end fails the test (false) instead of
// hanging it; the condition is what synchronises, never the interval.
#ifndef KVINDEXER_TESTS_SUPPORT_WAIT_UNTIL_H_
#define KVINDEXER_TESTS_SUPPORT_WAIT_UNTIL_H_

#include <chrono>
#include <functional>
#include <thread>

namespace kvindexer::test_support {

// Calls `condition` every `interval` until it returns true (then true) or
// until `timeout` has passed (then false).
inline bool WaitUntil(
    const std::function<bool()>& condition, std::chrono::milliseconds timeout,
    std::chrono::milliseconds interval = std::chrono::milliseconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(interval);
  }
}

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_WAIT_UNTIL_H_
