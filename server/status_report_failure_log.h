// StatusReportFailureLog: which of one router's failed status reports are
// logged (docs/fleet.md, "Status reports to routers"). The first failure of
// a run is logged at once; after it, at most one line per
// kStatusFailureLogEvery, which counts the failures left out since the
// previous line. The first report accepted after a run of failures gets an
// INFO line that counts the run.
//
// The lines are returned, not written, so that a test can read them; time
// comes from the clock given (common/clock.h).
//
// Thread safety: none; one router's thread owns it.
#ifndef KVINDEXER_SERVER_STATUS_REPORT_FAILURE_LOG_H_
#define KVINDEXER_SERVER_STATUS_REPORT_FAILURE_LOG_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/clock.h"

namespace kvindexer {

inline constexpr std::chrono::seconds kStatusFailureLogEvery{10};

class StatusReportFailureLog {
 public:
  // `router` names the router in every line. REQUIRES: `clock` outlives
  // this object.
  StatusReportFailureLog(const MonotonicClock* clock, std::string router)
      : clock_(clock), router_(std::move(router)) {}

  // A report failed (timeout, connection error, non-2xx answer) for the
  // reason `what`: the WARN line to write, or nullopt when it is left out.
  std::optional<std::string> Failed(std::string_view what);

  // A report was accepted: the INFO line to write when it ends a run of
  // failures, nullopt otherwise.
  std::optional<std::string> Accepted();

 private:
  const MonotonicClock* const clock_;
  const std::string router_;
  bool failing_ = false;
  uint64_t run_ = 0;       // failures since the last accepted report
  uint64_t left_out_ = 0;  // failures not logged since the last line
  MonotonicClock::TimePoint last_line_{};
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_STATUS_REPORT_FAILURE_LOG_H_
