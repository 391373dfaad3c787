#include "common/log_budget.h"

#include <chrono>
#include <utility>

#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace kvindexer {

LogBudget::LogBudget(const MonotonicClock* clock, uint32_t burst,
                     MonotonicClock::Duration refill)
    : clock_(clock),
      burst_(burst),
      refill_(refill),
      tokens_(burst),
      refilled_(clock->Now()) {}

LogBudget::Admission LogBudget::Admit() {
  const MonotonicClock::TimePoint now = clock_->Now();
  std::lock_guard<std::mutex> lock(mu_);
  if (now > refilled_) {
    const auto intervals = static_cast<uint64_t>((now - refilled_) / refill_);
    if (intervals >= burst_ - tokens_) {
      // Full again: time spent full earns nothing.
      tokens_ = burst_;
      refilled_ = now;
    } else {
      tokens_ += static_cast<uint32_t>(intervals);
      refilled_ += refill_ * static_cast<int64_t>(intervals);
    }
  }
  if (tokens_ == 0) {
    ++pending_;
    ++suppressed_total_;
    return Admission{};
  }
  --tokens_;
  return Admission{true, std::exchange(pending_, 0)};
}

uint64_t LogBudget::suppressed_total() const {
  std::lock_guard<std::mutex> lock(mu_);
  return suppressed_total_;
}

LogBudget& PerWorkerLogBudget() {
  static LogBudget* const budget =
      new LogBudget(&MonotonicClock::Real(), kPerWorkerLogBurst,
                    std::chrono::duration_cast<MonotonicClock::Duration>(
                        kPerWorkerLogRefill));
  return *budget;
}

std::string SuppressedLinesLine(uint64_t n, const LogBudget& budget) {
  return fmt::format(
      "{} {} (per-worker log lines: at most {} at once, then one per {} ms)", n,
      kSuppressedLinesLogMessage, budget.burst(),
      std::chrono::duration_cast<std::chrono::milliseconds>(budget.refill())
          .count());
}

void LogWithinBudget(LogBudget* budget, const LogLineSink& sink,
                     spdlog::level::level_enum level, std::string_view line) {
  if (budget != nullptr) {
    const LogBudget::Admission admission = budget->Admit();
    if (!admission.log) return;
    if (admission.suppressed != 0) {
      sink(spdlog::level::warn,
           SuppressedLinesLine(admission.suppressed, *budget));
    }
  }
  sink(level, line);
}

void LogPerWorkerLine(spdlog::level::level_enum level, std::string_view line) {
  // A line the logger would drop takes no token.
  if (!spdlog::default_logger_raw()->should_log(level)) return;
  LogWithinBudget(
      &PerWorkerLogBudget(),
      [](spdlog::level::level_enum l, std::string_view text) {
        spdlog::log(l, "{}", text);
      },
      level, line);
}

}  // namespace kvindexer
