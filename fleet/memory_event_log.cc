#include "fleet/memory_event_log.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace kvindexer::fleet {
namespace {

absl::Status Unreachable() {
  return absl::UnavailableError("the in-memory log is set unavailable");
}

}  // namespace

MemoryEventLog::MemoryEventLog(size_t max_payload_bytes)
    : max_payload_bytes_(max_payload_bytes) {}

absl::StatusOr<AppendAck> MemoryEventLog::Append(
    std::string_view worker_id, std::string_view payload,
    std::string_view dedup_id, std::optional<uint64_t> expected_last) {
  if (worker_id.empty()) {
    return absl::InvalidArgumentError("an empty worker id cannot be logged");
  }
  if (payload.size() > max_payload_bytes_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a record of ", payload.size(), " bytes is above the log's limit of ",
        max_payload_bytes_));
  }
  std::lock_guard lock(mu_);
  if (unavailable_) return Unreachable();
  if (!dedup_id.empty()) {
    if (auto it = position_by_dedup_id_.find(dedup_id);
        it != position_by_dedup_id_.end()) {
      return AppendAck{.position = it->second, .duplicate = true};
    }
  }
  const auto last_it = last_by_worker_.find(worker_id);
  const uint64_t last = last_it == last_by_worker_.end() ? 0 : last_it->second;
  if (expected_last.has_value() && *expected_last != last) {
    return absl::FailedPreconditionError(
        absl::StrCat("worker ", std::string(worker_id), "'s last record is at ",
                     last, ", not at ", *expected_last,
                     ": another writer appended for this worker"));
  }
  const uint64_t position = first_ + records_.size();
  records_.push_back(LoggedRecord{.position = position,
                                  .worker_id = std::string(worker_id),
                                  .payload = std::string(payload)});
  last_by_worker_[std::string(worker_id)] = position;
  if (!dedup_id.empty()) {
    position_by_dedup_id_.emplace(std::string(dedup_id), position);
  }
  appended_.notify_all();
  return AppendAck{.position = position, .duplicate = false};
}

absl::StatusOr<uint64_t> MemoryEventLog::LastPositionOf(
    std::string_view worker_id) {
  std::lock_guard lock(mu_);
  if (unavailable_) return Unreachable();
  const auto it = last_by_worker_.find(worker_id);
  return it == last_by_worker_.end() ? 0 : it->second;
}

absl::StatusOr<std::vector<LoggedRecord>> MemoryEventLog::Read(
    uint64_t from, size_t max_records, std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  if (unavailable_) return Unreachable();
  from = std::max(from, first_);
  appended_.wait_for(lock, wait, [&] {
    return unavailable_ || first_ + records_.size() > from;
  });
  if (unavailable_) return Unreachable();
  std::vector<LoggedRecord> out;
  for (uint64_t p = std::max(from, first_);
       p < first_ + records_.size() && out.size() < max_records; ++p) {
    out.push_back(records_[p - first_]);
  }
  return out;
}

absl::StatusOr<LogBounds> MemoryEventLog::Bounds() {
  std::lock_guard lock(mu_);
  if (unavailable_) return Unreachable();
  return LogBounds{.first = first_, .last = first_ + records_.size() - 1};
}

absl::Status MemoryEventLog::TrimBefore(uint64_t position) {
  std::lock_guard lock(mu_);
  if (unavailable_) return Unreachable();
  while (first_ < position && !records_.empty()) {
    const LoggedRecord& front = records_.front();
    const auto it = last_by_worker_.find(front.worker_id);
    if (it != last_by_worker_.end() && it->second == front.position) {
      last_by_worker_.erase(it);
    }
    records_.pop_front();
    ++first_;
  }
  // Trimming past the end moves the next position too.
  if (records_.empty() && first_ < position) first_ = position;
  return absl::OkStatus();
}

void MemoryEventLog::SetUnavailable(bool unavailable) {
  std::lock_guard lock(mu_);
  unavailable_ = unavailable;
  appended_.notify_all();
}

}  // namespace kvindexer::fleet
