// WalFailureMonitor: what the write-ahead log's failures tell the operator
// and the server (docs/durability.md, "Write failures"; docs/health.md,
// "When the state log fails").
//
// Two jobs, both off the hot path (only refused writes reach it):
// - Every append the log refuses is counted by reason (WalRefusal) and
//   logged, throttled per reason: the first refusal of a reason is logged at
//   once, then at most one line per reason and interval, which counts the
//   refusals of that reason left out since the previous line. A full disk
//   under a flood of applies writes a bounded log.
// - The log's poisoning: after a failed fdatasync (or a record it cannot
//   cut back) the writer refuses every later write until the server
//   restarts. The first poisoning is kept (Failure()), logged once at
//   ERROR, and handed once to the callback (SetOnFailure): that is how the
//   server stops reporting SERVING without durable/ depending on gRPC.
//
// Thread safety: every method may be called concurrently. poisoned(), and
// Failure() while the log works, are one atomic load. The sink and the
// callback are called outside this class's mutex, on the thread that
// reported the refusal or the failure.
#ifndef KVINDEXER_DURABLE_WAL_FAILURE_MONITOR_H_
#define KVINDEXER_DURABLE_WAL_FAILURE_MONITOR_H_

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/first_failure_latch.h"
#include "spdlog/common.h"

namespace kvindexer::durable {

// Why the log refused an append. The names are the `reason` label of
// kvindexer_wal_append_failures_total (docs/metrics.md).
enum class WalRefusal {
  kNoSpace,        // "no_space": ENOSPC or EDQUOT
  kFileTooLarge,   // "file_too_large": EFBIG (a file size limit)
  kIoError,        // "io_error": EIO and every other errno
  kPoisoned,       // "poisoned": the log failed earlier (Failure())
  kInvalidRecord,  // "invalid_record": empty, too large or unserialisable
};
inline constexpr size_t kWalRefusalCount = 5;

std::string_view WalRefusalName(WalRefusal reason);
// The reason for a write that failed with `err`.
WalRefusal WalRefusalForErrno(int err);

// Refusals so far, by reason.
struct WalRefusalCounts {
  std::array<uint64_t, kWalRefusalCount> by_reason{};
  uint64_t of(WalRefusal reason) const {
    return by_reason[static_cast<size_t>(reason)];
  }
};

inline constexpr std::string_view kWalAppendRefusedLogMessage =
    "state log append refused";
inline constexpr std::string_view kWalFailedLogMessage =
    "the state log failed and refuses every write; health is NOT_SERVING "
    "until the server is restarted";
// Refusal lines are logged at most this often per reason.
inline constexpr std::chrono::seconds kWalRefusalLogInterval{10};

class WalFailureMonitor {
 public:
  // Receives each emitted line. Must be thread-safe.
  using Sink =
      std::function<void(spdlog::level::level_enum level, std::string_view)>;
  // Receives the recorded failure (the text Failure() returns).
  using FailureCallback = FirstFailureLatch::Callback;

  // REQUIRES: `clock` (null: MonotonicClock::Real()) outlives the monitor.
  // A null sink logs through spdlog's default logger.
  explicit WalFailureMonitor(
      const MonotonicClock* clock = nullptr, Sink sink = nullptr,
      MonotonicClock::Duration interval = kWalRefusalLogInterval);
  WalFailureMonitor(const WalFailureMonitor&) = delete;
  WalFailureMonitor& operator=(const WalFailureMonitor&) = delete;

  // One append was refused for `reason`; `error` is the status message the
  // caller got. Logged at WARN for kPoisoned (the failure itself has its ERROR
  // line), at ERROR otherwise.
  void Refused(WalRefusal reason, std::string_view error);

  // The log is poisoned: `failure` says how and in which file. Only the
  // first call counts; it is logged at ERROR and handed to the callback.
  void Poisoned(std::string_view failure);

  // The first poisoning's text; nullopt while the log works.
  std::optional<std::string> Failure() const;
  bool poisoned() const { return latch_.failed(); }

  // Sets (or with null, clears) the callback. Called once, for the first
  // failure; at once, from here, when it has already happened.
  void SetOnFailure(FailureCallback callback);

  WalRefusalCounts counts() const;

 private:
  struct Throttle {
    std::optional<MonotonicClock::TimePoint> last_line;
    uint64_t suppressed = 0;
  };

  const MonotonicClock* clock_;
  Sink sink_;
  const MonotonicClock::Duration interval_;
  FirstFailureLatch latch_;
  mutable std::mutex mu_;
  // Guarded by mu_.
  WalRefusalCounts counts_;
  std::array<Throttle, kWalRefusalCount> throttles_;
};

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_WAL_FAILURE_MONITOR_H_
