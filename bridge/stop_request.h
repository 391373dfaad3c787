// A one-shot stop request shared by the signal thread and the bridge loop.
// Waits on it are interruptible, so backoff sleeps end as soon as SIGINT or
// SIGTERM arrives, and a registered canceller (the in-flight RPC) is invoked
// at once.
//
// Thread safety: every method is thread-safe.
#ifndef KVINDEXER_BRIDGE_STOP_REQUEST_H_
#define KVINDEXER_BRIDGE_STOP_REQUEST_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace kvindexer::bridge {

class StopRequest {
 public:
  // Requests shutdown; idempotent. Runs the current canceller, if any.
  void Trigger();

  bool triggered() const;

  // Waits up to `timeout`; returns true if shutdown was requested.
  bool WaitFor(std::chrono::milliseconds timeout) const;

  // Installs `cancel` to be run by Trigger() (or immediately, if shutdown was
  // already requested) until ClearCanceller(). Used to drop an in-flight RPC.
  void SetCanceller(std::function<void()> cancel);
  void ClearCanceller();

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool triggered_ = false;
  // Guards cancel_ and is held while it runs; never taken inside mu_.
  std::mutex cancel_mu_;
  std::function<void()> cancel_;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_STOP_REQUEST_H_
