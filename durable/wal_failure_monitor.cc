#include "durable/wal_failure_monitor.h"

#include <cerrno>
#include <utility>

#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace kvindexer::durable {

std::string_view WalRefusalName(WalRefusal reason) {
  switch (reason) {
    case WalRefusal::kNoSpace:
      return "no_space";
    case WalRefusal::kFileTooLarge:
      return "file_too_large";
    case WalRefusal::kIoError:
      return "io_error";
    case WalRefusal::kPoisoned:
      return "poisoned";
    case WalRefusal::kInvalidRecord:
      return "invalid_record";
  }
  return "io_error";
}

WalRefusal WalRefusalForErrno(int err) {
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      return WalRefusal::kNoSpace;
    case EFBIG:
      return WalRefusal::kFileTooLarge;
    default:
      return WalRefusal::kIoError;
  }
}

WalFailureMonitor::WalFailureMonitor(const MonotonicClock* clock, Sink sink,
                                     MonotonicClock::Duration interval)
    : clock_(clock != nullptr ? clock : &MonotonicClock::Real()),
      sink_(
          sink != nullptr
              ? std::move(sink)
              : [](spdlog::level::level_enum level,
                   std::string_view line) { spdlog::log(level, "{}", line); }),
      interval_(interval) {}

void WalFailureMonitor::Refused(WalRefusal reason, std::string_view error) {
  const size_t index = static_cast<size_t>(reason);
  std::optional<std::string> line;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_.by_reason[index];
    Throttle& throttle = throttles_[index];
    const MonotonicClock::TimePoint now = clock_->Now();
    if (throttle.last_line.has_value() &&
        now - *throttle.last_line < interval_) {
      ++throttle.suppressed;
    } else {
      line = fmt::format("{} reason={}", kWalAppendRefusedLogMessage,
                         WalRefusalName(reason));
      if (throttle.suppressed != 0) {
        *line +=
            fmt::format(" suppressed_since_last_line={}", throttle.suppressed);
      }
      // Last, since it is free text.
      *line += fmt::format(" error={}", error);
      throttle.last_line = now;
      throttle.suppressed = 0;
    }
  }
  if (line.has_value()) {
    sink_(reason == WalRefusal::kPoisoned ? spdlog::level::warn
                                          : spdlog::level::err,
          *line);
  }
}

void WalFailureMonitor::Poisoned(std::string_view failure) {
  const std::optional<FailureCallback> first =
      latch_.Trip(std::string(failure));
  if (!first.has_value()) return;
  sink_(spdlog::level::err,
        fmt::format("{} error={}", kWalFailedLogMessage, failure));
  if (*first != nullptr) (*first)(std::string(failure));
}

std::optional<std::string> WalFailureMonitor::Failure() const {
  return latch_.Failure();
}

void WalFailureMonitor::SetOnFailure(FailureCallback callback) {
  latch_.SetCallback(std::move(callback));
}

WalRefusalCounts WalFailureMonitor::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

}  // namespace kvindexer::durable
