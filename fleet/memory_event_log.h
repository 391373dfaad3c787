// EventLog in one process's memory, with the semantics of the JetStream
// driver (fleet/event_log.h): positions, de-duplication (the window is the
// log's whole life), per-worker fencing, waiting reads and trimming. For
// tests of everything that sits on a log; SetUnavailable() makes every call
// fail as an unreachable broker would.
#ifndef KVINDEXER_FLEET_MEMORY_EVENT_LOG_H_
#define KVINDEXER_FLEET_MEMORY_EVENT_LOG_H_

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>

#include "fleet/event_log.h"

namespace kvindexer::fleet {

class MemoryEventLog final : public EventLog {
 public:
  explicit MemoryEventLog(size_t max_payload_bytes = 1 << 20);

  absl::StatusOr<AppendAck> Append(
      std::string_view worker_id, std::string_view payload,
      std::string_view dedup_id,
      std::optional<uint64_t> expected_last) override;
  absl::StatusOr<uint64_t> LastPositionOf(std::string_view worker_id) override;
  absl::StatusOr<std::vector<LoggedRecord>> Read(
      uint64_t from, size_t max_records,
      std::chrono::milliseconds wait) override;
  absl::StatusOr<LogBounds> Bounds() override;
  absl::Status TrimBefore(uint64_t position) override;
  size_t max_payload_bytes() const override { return max_payload_bytes_; }

  // While true, every call answers UNAVAILABLE and appends nothing.
  void SetUnavailable(bool unavailable);

 private:
  const size_t max_payload_bytes_;
  mutable std::mutex mu_;
  std::condition_variable appended_;
  bool unavailable_ = false;
  uint64_t first_ = 1;  // position of records_.front()
  std::deque<LoggedRecord> records_;
  std::map<std::string, uint64_t, std::less<>> last_by_worker_;
  std::map<std::string, uint64_t, std::less<>> position_by_dedup_id_;
};

}  // namespace kvindexer::fleet

#endif  // KVINDEXER_FLEET_MEMORY_EVENT_LOG_H_
