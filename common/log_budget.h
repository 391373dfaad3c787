// LogBudget: a token bucket for log lines. The process shares one,
// PerWorkerLogBudget(), among the lines that name a worker a client chose
// and that a client can cause at will: a sequence gap, an expired heartbeat,
// a malformed heartbeat or fidelity header, a claim conflict, a worker
// removed by a liveness sweep (docs/security.md, "Log lines"). Each of these
// is limited per worker or not at all, so a client cycling through worker
// ids would otherwise write as many lines as it sends requests.
//
// The bucket holds at most `burst` tokens and starts full; a line takes one,
// and one comes back per `refill` interval. A line without a token is
// dropped and counted. The next line admitted reports the count: its caller
// logs SuppressedLinesLine(n) just before it (LogWithinBudget does both).
// A quiet period therefore costs nothing, a burst up to `burst` lines is
// logged whole, and a flood writes `burst` lines and then one line (plus a
// summary) per `refill`.
//
// Time comes from the clock the budget is given (common/clock.h), so tests
// move it by hand (tests/support/fake_clock.h).
//
// Thread safety: every method may be called concurrently.
#ifndef KVINDEXER_COMMON_LOG_BUDGET_H_
#define KVINDEXER_COMMON_LOG_BUDGET_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "spdlog/common.h"

namespace kvindexer {

// PerWorkerLogBudget()'s shape: 100 lines at once, then one a second. Far
// above what a healthy fleet logs per worker (a few lines on a restart or a
// gap), far below what a log pipeline must absorb from a hostile client.
inline constexpr uint32_t kPerWorkerLogBurst = 100;
inline constexpr std::chrono::seconds kPerWorkerLogRefill{1};

inline constexpr std::string_view kSuppressedLinesLogMessage =
    "similar lines suppressed";

// Receives one log line at a level. Must be thread-safe.
using LogLineSink =
    std::function<void(spdlog::level::level_enum level, std::string_view)>;

class LogBudget {
 public:
  struct Admission {
    // Whether to log the line.
    bool log = false;
    // When `log`: lines dropped since the previous admitted one, to be
    // reported before this one. Otherwise 0.
    uint64_t suppressed = 0;
  };

  // REQUIRES: `clock` outlives the budget; burst >= 1; refill > 0.
  LogBudget(const MonotonicClock* clock, uint32_t burst,
            MonotonicClock::Duration refill);
  LogBudget(const LogBudget&) = delete;
  LogBudget& operator=(const LogBudget&) = delete;

  // Takes a token for one line, if there is one.
  Admission Admit();

  // Lines dropped since the budget was made.
  uint64_t suppressed_total() const;

  uint32_t burst() const { return burst_; }
  MonotonicClock::Duration refill() const { return refill_; }

 private:
  const MonotonicClock* const clock_;
  const uint32_t burst_;
  const MonotonicClock::Duration refill_;
  mutable std::mutex mu_;
  uint32_t tokens_;                     // guarded by mu_
  MonotonicClock::TimePoint refilled_;  // guarded by mu_
  uint64_t pending_ = 0;                // guarded by mu_
  uint64_t suppressed_total_ = 0;       // guarded by mu_
};

// The process's budget for per-worker lines: kPerWorkerLogBurst and
// kPerWorkerLogRefill on the real monotonic clock. Never destroyed.
LogBudget& PerWorkerLogBudget();

// "<n> similar lines suppressed (per-worker log lines: at most B at once,
// then one per R ms)".
std::string SuppressedLinesLine(uint64_t n, const LogBudget& budget);

// Passes `line` to `sink` at `level` if `budget` admits it, after a WARN
// SuppressedLinesLine when lines were dropped before it. A null `budget`
// admits every line.
void LogWithinBudget(LogBudget* budget, const LogLineSink& sink,
                     spdlog::level::level_enum level, std::string_view line);

// LogWithinBudget on PerWorkerLogBudget() and spdlog's default logger.
void LogPerWorkerLine(spdlog::level::level_enum level, std::string_view line);

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_LOG_BUDGET_H_
