#include "replica/applied_outcomes.h"

#include <algorithm>
#include <utility>

#include "fmt/format.h"

namespace kvindexer::replica {

AppliedOutcomes::Watch::Watch(AppliedOutcomes& outcomes) : outcomes_(outcomes) {
  std::lock_guard<std::mutex> lock(outcomes_.mu_);
  ++outcomes_.watches_;
}

AppliedOutcomes::Watch::~Watch() {
  std::lock_guard<std::mutex> lock(outcomes_.mu_);
  if (--outcomes_.watches_ == 0) outcomes_.kept_.clear();
}

void AppliedOutcomes::Applied(uint64_t position, const RecordResult& result) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    passed_ = std::max(passed_, position);
    if (current_.has_value()) current_ = position;
    if (watches_ > 0) {
      kept_.insert_or_assign(position, result);
      while (kept_.size() > kMaxKept) kept_.erase(kept_.begin());
    }
  }
  moved_.notify_all();
}

void AppliedOutcomes::Skipped(uint64_t position) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    passed_ = std::max(passed_, position);
    current_.reset();
  }
  moved_.notify_all();
}

void AppliedOutcomes::Reloaded(uint64_t position) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    passed_ = std::max(passed_, position);
    current_ = position;
  }
  moved_.notify_all();
}

absl::StatusOr<RecordResult> AppliedOutcomes::WaitFor(
    uint64_t position, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!moved_.wait_for(lock, timeout, [&] { return passed_ >= position; })) {
    return absl::UnavailableError(fmt::format(
        "this replica has not applied fleet event log position {} within {} "
        "ms (it has applied up to {}); the write is in the log and every "
        "replica applies it once it reaches it",
        position, timeout.count(), passed_));
  }
  auto it = kept_.find(position);
  if (it == kept_.end()) {
    return absl::UnavailableError(fmt::format(
        "this replica went past fleet event log position {} without "
        "applying it here (trimmed, or covered by a reloaded snapshot); its "
        "outcome is not known",
        position));
  }
  RecordResult result = std::move(it->second);
  kept_.erase(it);
  return result;
}

uint64_t AppliedOutcomes::passed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return passed_;
}

std::optional<uint64_t> AppliedOutcomes::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

}  // namespace kvindexer::replica
