// PausableEventLog: a fleet::MemoryEventLog whose reads a test can pause
// while Bounds keeps answering, so that a replica falls behind a log that
// grows (replica/log_follower.h), and whose calls it can make hang, as
// calls to a NATS server that stopped answering do: HangCalls holds Bounds
// and Read, which answer UNAVAILABLE once released (a timeout); HangReads
// holds Read alone, which answers as usual once released (a server that
// answers late). Appends are never affected. Test-only.
#ifndef KVINDEXER_TESTS_SUPPORT_PAUSABLE_EVENT_LOG_H_
#define KVINDEXER_TESTS_SUPPORT_PAUSABLE_EVENT_LOG_H_

#include <algorithm>
#include <chrono>
#include <condition_variable>
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
  // While true, Bounds and Read block; each answers UNAVAILABLE once this
  // is set false again. Release before the caller is joined.
  void HangCalls(bool hang) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      hang_ = hang;
    }
    released_.notify_all();
  }
  // While true, Read blocks; it then answers as it would have. Release
  // before the caller is joined.
  void HangReads(bool hang) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      hang_reads_ = hang;
    }
    released_.notify_all();
  }
  // Calls that have begun to hang since the start.
  uint64_t hung_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return hung_calls_;
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
    if (absl::Status hung = HangWhileHung(); !hung.ok()) return hung;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (hang_reads_) {
        ++hung_calls_;
        released_.wait(lock, [this] { return !hang_reads_; });
      }
    }
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
  absl::StatusOr<fleet::LogBounds> Bounds() override {
    if (absl::Status hung = HangWhileHung(); !hung.ok()) return hung;
    return log_.Bounds();
  }
  absl::Status TrimBefore(uint64_t position) override {
    return log_.TrimBefore(position);
  }
  size_t max_payload_bytes() const override { return log_.max_payload_bytes(); }

 private:
  // Blocks while hang_ holds; UNAVAILABLE when it did, OK when it did not.
  absl::Status HangWhileHung() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!hang_) return absl::OkStatus();
    ++hung_calls_;
    released_.wait(lock, [this] { return !hang_; });
    return absl::UnavailableError("the log did not answer in time");
  }

  fleet::MemoryEventLog log_;
  mutable std::mutex mu_;
  std::condition_variable released_;
  bool paused_ = false;
  uint64_t paused_reads_ = 0;
  bool hang_ = false;
  bool hang_reads_ = false;
  uint64_t hung_calls_ = 0;
};

}  // namespace kvindexer

#endif  // KVINDEXER_TESTS_SUPPORT_PAUSABLE_EVENT_LOG_H_
