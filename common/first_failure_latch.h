// FirstFailureLatch: keeps the first failure a component reports, as one
// line of text, and hands it once to one callback. The backend's and the
// state log's failure monitors (core/backend_failure_monitor.h,
// durable/wal_failure_monitor.h) keep their "cannot continue" failure here;
// the callback is how the server learns that it must stop reporting SERVING.
//
// Exactly once: a callback set before the failure is handed out by the Trip
// that keeps the failure, and its caller calls it; one set after the
// failure is called by SetCallback at once. Trip answers the callback
// instead of calling it so that the caller can log the failure first and
// call it outside its own locks.
//
// Thread safety: every method may be called concurrently. failed(), and
// Failure() while nothing has failed, are one atomic load. No method calls
// out while it holds the latch's mutex.
#ifndef KVINDEXER_COMMON_FIRST_FAILURE_LATCH_H_
#define KVINDEXER_COMMON_FIRST_FAILURE_LATCH_H_

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

namespace kvindexer {

class FirstFailureLatch {
 public:
  // Receives the kept failure (the text Failure() returns).
  using Callback = std::function<void(const std::string& failure)>;

  FirstFailureLatch() = default;
  FirstFailureLatch(const FirstFailureLatch&) = delete;
  FirstFailureLatch& operator=(const FirstFailureLatch&) = delete;

  // Keeps `failure` when nothing failed before. Answers nullopt when a
  // failure was kept already (`failure` is then dropped). Otherwise answers
  // the callback set at this moment, empty when there is none: the caller
  // calls it with `failure` (outside its own locks); nothing else will.
  [[nodiscard]] std::optional<Callback> Trip(std::string failure);

  // The kept failure; nullopt while there is none.
  std::optional<std::string> Failure() const;
  bool failed() const { return failed_.load(std::memory_order_acquire); }

  // Sets (or with null, clears) the callback. When a failure was kept
  // already, calls it at once, from here, with that failure.
  void SetCallback(Callback callback);

 private:
  std::atomic<bool> failed_{false};
  mutable std::mutex mu_;
  // Guarded by mu_; failure_ is written once, before failed_ becomes true.
  std::string failure_;
  Callback callback_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_FIRST_FAILURE_LATCH_H_
