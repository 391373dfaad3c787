// PausableEventLog: a fleet::MemoryEventLog whose reads a test can pause
// while Bounds keeps answering, so that a replica falls behind a log that
// grows (replica/log_follower.h). Test-only.
#ifndef KVINDEXER_TESTS_SUPPORT_PAUSABLE_EVENT_LOG_H_
#define KVINDEXER_TESTS_SUPPORT_PAUSABLE_EVENT_LOG_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "fleet/memory_event_log.h"

namespace kvindexer {

class PausableEventLog final : public fleet::EventLog {
 public:
  void PauseReads(bool paused) {
    std::lock_guard<std::mutex> lock(mu_);
    paused_ = paused;
  }
  // Reads answered while paused.
  uint64_t paused_reads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return paused_reads_;
  }
  absl::StatusOr<fleet::AppendAck> Append(
      std::string_view worker_id, std::string_view payload,
      std::string_view dedup_id,
      std::optional<uint64_t> expected_last) override {
    return log_.Append(worker_id, payload, dedup_id, expected_last);
  }
  absl::StatusOr<uint64_t> LastPositionOf(std::string_view worker) override {
    return log_.LastPositionOf(worker);
  }
  absl::StatusOr<std::vector<fleet::LoggedRecord>> Read(
      uint64_t from, size_t max_records,
      std::chrono::milliseconds wait) override {
    bool paused;
    {
      std::lock_guard<std::mutex> lock(mu_);
      paused = paused_;
      if (paused) ++paused_reads_;
    }
    if (!paused) return log_.Read(from, max_records, wait);
    // What a read finds when there is nothing: it waits, then answers none.
    std::this_thread::sleep_for(std::min(wait, std::chrono::milliseconds(5)));
    return std::vector<fleet::LoggedRecord>{};
  }
  absl::StatusOr<fleet::LogBounds> Bounds() override { return log_.Bounds(); }
  absl::Status TrimBefore(uint64_t position) override {
    return log_.TrimBefore(position);
  }
  size_t max_payload_bytes() const override { return log_.max_payload_bytes(); }

 private:
  fleet::MemoryEventLog log_;
  mutable std::mutex mu_;
  bool paused_ = false;
  uint64_t paused_reads_ = 0;
};

}  // namespace kvindexer

#endif  // KVINDEXER_TESTS_SUPPORT_PAUSABLE_EVENT_LOG_H_
