// BackendFailureMonitor: what the host does with a backend mutation (Apply,
// RemoveWorker) that fails (docs/health.md, "When the backend fails").
//
// Two jobs, both off the hot path (only failed mutations reach it):
// - A log line per failure, with the operation, worker, code and message,
//   throttled so that a backend that refuses every write under a flood of
//   applies writes a bounded log: the first failure is logged, then at most
//   one line per interval, which counts the failures left out since the
//   previous line.
// - The backend-failure rule: a mutation that answers INTERNAL means the
//   backend cannot continue (include/kvindexer/backend.h, BackendCode). The
//   first such failure is kept (Failure()), logged at ERROR whatever the
//   throttle says (even when the caller logs the failure itself), and handed
//   once to the callback (SetOnFailure), which is how the server learns that it
//   must stop reporting SERVING without the core depending on gRPC.
//
// Thread safety: every method may be called concurrently. Failure() is one
// atomic load while nothing has failed. The sink and the callback are
// called outside this class's mutex, on the thread that recorded the
// failure (a mutation's: it may hold the Indexer's mutation mutex).
#ifndef KVINDEXER_CORE_BACKEND_FAILURE_MONITOR_H_
#define KVINDEXER_CORE_BACKEND_FAILURE_MONITOR_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/first_failure_latch.h"
#include "kvindexer/backend.h"
#include "spdlog/common.h"

namespace kvindexer {

inline constexpr std::string_view kBackendMutationFailedLogMessage =
    "backend mutation failed";
inline constexpr std::string_view kBackendCannotContinueLogMessage =
    "the backend failed in a way it cannot continue from; health is "
    "NOT_SERVING until the server is restarted";

// Lines logged at most this often, the first failure and the one that
// breaks the backend aside.
inline constexpr std::chrono::seconds kBackendFailureLogInterval{10};

enum class BackendMutation { kApply, kRemoveWorker };

// "apply" or "remove_worker", as in the log lines.
std::string_view BackendMutationName(BackendMutation mutation);

class BackendFailureMonitor {
 public:
  // Receives each emitted line. Must be thread-safe.
  using Sink =
      std::function<void(spdlog::level::level_enum level, std::string_view)>;
  // Receives the recorded failure (the text Failure() returns).
  using FailureCallback = FirstFailureLatch::Callback;

  // REQUIRES: clock outlives the monitor. A null sink logs through spdlog's
  // default logger.
  explicit BackendFailureMonitor(
      const MonotonicClock* clock, Sink sink = nullptr,
      MonotonicClock::Duration interval = kBackendFailureLogInterval);
  BackendFailureMonitor(const BackendFailureMonitor&) = delete;
  BackendFailureMonitor& operator=(const BackendFailureMonitor&) = delete;

  // One mutation of `worker_id` answered `status` (not kOk). `logged` says
  // the caller logs this failure itself (a removal's own line,
  // core/worker_lifecycle_log.h): then only the failure rule applies.
  void Record(BackendMutation mutation, std::string_view worker_id,
              const BackendStatus& status, bool logged = false);

  // The first failure the backend cannot continue from, as one line of
  // text; nullopt while there was none.
  std::optional<std::string> Failure() const;
  bool failed() const { return latch_.failed(); }

  // Sets (or with null, clears) the callback. Called once, for the first
  // such failure; at once, from here, when it has already happened.
  void SetOnFailure(FailureCallback callback);

 private:
  // The line for one failure; `suppressed` failures were left out since
  // the previous line.
  static std::string Line(std::string_view message, BackendMutation mutation,
                          std::string_view worker_id,
                          const BackendStatus& status, uint64_t suppressed);

  const MonotonicClock* clock_;
  Sink sink_;
  const MonotonicClock::Duration interval_;
  // Tripped only under mu_, so that the first failure and the throttle's
  // restart are one step.
  FirstFailureLatch latch_;
  std::mutex mu_;
  // Guarded by mu_.
  std::optional<MonotonicClock::TimePoint> last_line_;
  uint64_t suppressed_ = 0;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_BACKEND_FAILURE_MONITOR_H_
