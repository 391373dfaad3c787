// WorkerLifecycleLog: the log lines of worker liveness and removal
// (docs/contract.md, "Recovery > Worker liveness and removal").
//
// | Event                                   | Level | Throttle                |
// | a sweep clears a silent worker          | WARN  | per-worker budget       |
// | the census rule refuses a sweep         | WARN  | doubling, per streak    |
// | a malformed heartbeat header            | WARN  | once per worker (table) |
// |                                         |       | and per-worker budget   |
// | the backend fails to remove a worker    | ERROR | none                    |
// | a worker removed by liveness            | INFO  | per-worker budget       |
// | a worker removed by the admin API       | INFO  | none                    |
// | a worker removed by configuration       | DEBUG | none                    |
//
// The per-worker budget (common/log_budget.h) bounds the lines a client can
// cause by cycling through worker ids, whatever each worker's own limit.
//
// A refused sweep repeats every sweep period for as long as the fleet looks
// dead, so its line is logged at the 1st, 2nd, 4th, 8th, ... refusal in a row;
// the streak ends with the first sweep that is not refused. Lines have the
// form "<message> key=value ..."; worker ids, header values and errors are
// escaped and cut (common/log_text.h).
//
// Thread safety: every method may be called concurrently; the sink is called
// outside any lock of this class.
#ifndef KVINDEXER_CORE_WORKER_LIFECYCLE_LOG_H_
#define KVINDEXER_CORE_WORKER_LIFECYCLE_LOG_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>

#include "common/log_budget.h"
#include "core/removal_reason.h"
#include "spdlog/common.h"

namespace kvindexer {

inline constexpr std::string_view kHeartbeatExpiredLogMessage =
    "heartbeat expired; placements cleared";
inline constexpr std::string_view kCensusRefusalLogMessage =
    "every heartbeating worker looks dead at once; refusing to clear the "
    "index";
inline constexpr std::string_view kMalformedHeartbeatLogMessage =
    "ignoring a heartbeat header that is not 1..4294967295 ms";
inline constexpr std::string_view kRemovalFailedLogMessage =
    "the backend failed to remove a worker; its record is kept";
inline constexpr std::string_view kWorkerRemovedLogMessage = "worker removed";

class WorkerLifecycleLog {
 public:
  // Receives each emitted line. Must be thread-safe.
  using Sink =
      std::function<void(spdlog::level::level_enum level, std::string_view)>;

  // Logs through spdlog's default logger, within PerWorkerLogBudget().
  WorkerLifecycleLog();
  // Logs to `sink`, within `budget` (no limit when null).
  // REQUIRES: `budget`, if any, outlives this object.
  explicit WorkerLifecycleLog(Sink sink, LogBudget* budget = nullptr);
  WorkerLifecycleLog(const WorkerLifecycleLog&) = delete;
  WorkerLifecycleLog& operator=(const WorkerLifecycleLog&) = delete;

  // A sweep cleared `worker_id`, silent for `silent_for`; `record_kept`
  // says whether its host record stays (a configured worker) or went.
  void RecordExpired(std::string_view worker_id,
                     std::chrono::nanoseconds silent_for, bool record_kept);
  // A sweep the census rule refused; `census` marked workers, all expired.
  void RecordRefusal(size_t census);
  // A sweep that was not refused: ends a refusal streak.
  void EndRefusals() { refusal_streak_.store(0, std::memory_order_relaxed); }
  void RecordMalformedHeartbeat(std::string_view worker_id,
                                std::string_view value);
  void RecordRemovalFailure(std::string_view worker_id, RemovalReason reason,
                            std::string_view error);
  void RecordRemoved(std::string_view worker_id, RemovalReason reason);

 private:
  Sink sink_;
  LogBudget* const budget_;
  std::atomic<uint64_t> refusal_streak_{0};
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_WORKER_LIFECYCLE_LOG_H_
