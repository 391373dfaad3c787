#include "bridge/stream_supervisor.h"

#include <utility>

#include "common/log_text.h"
#include "spdlog/spdlog.h"

namespace kvindexer::bridge {

StreamSupervisor::StreamSupervisor(std::string name, Attempt attempt,
                                   RecoveryClock* clock,
                                   std::chrono::milliseconds park_period)
    : name_(std::move(name)),
      attempt_(std::move(attempt)),
      clock_(clock),
      park_period_(park_period) {}

void StreamSupervisor::Run() {
  while (!clock_->Stopping()) {
    absl::Status status = attempt_();
    if (clock_->Stopping()) return;
    if (status.ok()) continue;  // the attempt ended on its own: start again
    parked_.store(true);
    parks_.fetch_add(1);
    spdlog::error(
        "stream {} parked: {}; retrying in {} s", name_,
        LogText(status.ToString(), kLogMessageBytes),
        std::chrono::duration_cast<std::chrono::seconds>(park_period_).count());
    if (clock_->WaitFor(park_period_)) return;
    parked_.store(false);
    spdlog::info("stream {}: retrying after being parked", name_);
  }
}

}  // namespace kvindexer::bridge
