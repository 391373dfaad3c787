#include "core/backend_failure_monitor.h"

#include <utility>

#include "absl/status/status.h"
#include "common/log_text.h"
#include "core/backend_status.h"
#include "core/stream_log_fields.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace kvindexer {

std::string_view BackendMutationName(BackendMutation mutation) {
  switch (mutation) {
    case BackendMutation::kApply:
      return "apply";
    case BackendMutation::kRemoveWorker:
      return "remove_worker";
  }
  return "unknown";
}

BackendFailureMonitor::BackendFailureMonitor(const MonotonicClock* clock,
                                             Sink sink,
                                             MonotonicClock::Duration interval)
    : clock_(clock),
      sink_(
          sink != nullptr
              ? std::move(sink)
              : [](spdlog::level::level_enum level,
                   std::string_view line) { spdlog::log(level, "{}", line); }),
      interval_(interval) {}

std::string BackendFailureMonitor::Line(std::string_view message,
                                        BackendMutation mutation,
                                        std::string_view worker_id,
                                        const BackendStatus& status,
                                        uint64_t suppressed) {
  // Through ToAbslStatus, so that an unknown code is named as the host
  // treats it (INTERNAL, with the number in the message).
  const absl::Status converted = ToAbslStatus(status);
  // Debian's abseil has its own string_view type, not std::string_view.
  const std::string_view error(converted.message().data(),
                               converted.message().size());
  std::string line = fmt::format(
      "{} op={} {} code={}", message, BackendMutationName(mutation),
      StreamLogFields(worker_id), absl::StatusCodeToString(converted.code()));
  if (suppressed != 0) {
    line += fmt::format(" suppressed_since_last_line={}", suppressed);
  }
  // Last, since it is free text.
  line += fmt::format(" error={}", LogText(error, kLogMessageBytes));
  return line;
}

void BackendFailureMonitor::Record(BackendMutation mutation,
                                   std::string_view worker_id,
                                   const BackendStatus& status, bool logged) {
  // The rule of docs/health.md, "When the backend fails".
  const absl::Status converted = ToAbslStatus(status);
  const bool fatal = converted.code() == absl::StatusCode::kInternal;
  std::optional<std::string> fatal_line;
  std::optional<std::string> line;
  std::optional<FailureCallback> first;
  std::string failure;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (fatal && !latch_.failed()) {
      failure =
          fmt::format("{} of worker {} failed: {}",
                      BackendMutationName(mutation), LogText(worker_id),
                      LogText(std::string_view(converted.message().data(),
                                               converted.message().size()),
                              kLogMessageBytes));
      first = latch_.Trip(failure);
    }
    if (first.has_value()) {
      // Logged even when the caller logs the failure too: this line says
      // what it means, once per process. It stands for the failure's own
      // line, so the throttle restarts.
      fatal_line = Line(kBackendCannotContinueLogMessage, mutation, worker_id,
                        status, suppressed_);
      last_line_ = clock_->Now();
      suppressed_ = 0;
    } else if (!logged) {
      const MonotonicClock::TimePoint now = clock_->Now();
      if (last_line_.has_value() && now - *last_line_ < interval_) {
        ++suppressed_;
      } else {
        line = Line(kBackendMutationFailedLogMessage, mutation, worker_id,
                    status, suppressed_);
        last_line_ = now;
        suppressed_ = 0;
      }
    }
  }
  if (fatal_line.has_value()) sink_(spdlog::level::err, *fatal_line);
  if (line.has_value()) {
    sink_(fatal ? spdlog::level::err : spdlog::level::warn, *line);
  }
  if (first.has_value() && *first != nullptr) (*first)(failure);
}

std::optional<std::string> BackendFailureMonitor::Failure() const {
  return latch_.Failure();
}

void BackendFailureMonitor::SetOnFailure(FailureCallback callback) {
  latch_.SetCallback(std::move(callback));
}

}  // namespace kvindexer
