#include "server/status_report_failure_log.h"

#include "fmt/format.h"

namespace kvindexer {

std::optional<std::string> StatusReportFailureLog::Failed(
    std::string_view what) {
  const MonotonicClock::TimePoint now = clock_->Now();
  ++run_;
  if (!failing_) {
    failing_ = true;
    left_out_ = 0;
    last_line_ = now;
    return fmt::format("status report to router {} failed: {}", router_, what);
  }
  if (now - last_line_ < kStatusFailureLogEvery) {
    ++left_out_;
    return std::nullopt;
  }
  const uint64_t left_out = left_out_;
  left_out_ = 0;
  last_line_ = now;
  return fmt::format(
      "status report to router {} failed: {} ({} failures since the last "
      "line not logged; {} in a row)",
      router_, what, left_out, run_);
}

std::optional<std::string> StatusReportFailureLog::Accepted() {
  if (!failing_) return std::nullopt;
  const uint64_t run = run_;
  failing_ = false;
  run_ = 0;
  left_out_ = 0;
  return fmt::format(
      "status reports to router {} accepted again after {} failed", router_,
      run);
}

}  // namespace kvindexer
