// SequenceGateLog: the log lines of gated applies (docs/contract.md,
// "Recovery > Gate logging").
//
// | Event                         | Level | Throttle                     |
// | G1 (no record)                | INFO  | doubling, its own counter    |
// | G2 (not ready / other epoch)  | INFO  | doubling, its own counter    |
// | G4 (gap: placements cleared)  | WARN  | the per-worker log budget    |
//
// A refused apply is normal while a bridge resynchronises, so G1 and G2 go
// through common/doubling_throttle.h, one counter each for every worker; a
// gap drops a worker's placements and is worth a line each, within the
// budget a client cycling through worker ids cannot exceed
// (common/log_budget.h). Lines have the form "<message> key=value ...";
// worker ids and epochs are escaped and cut (common/log_text.h).
//
// Thread safety: every method may be called concurrently; the counters are
// atomics and the sink is called outside any lock.
#ifndef KVINDEXER_CORE_SEQUENCE_GATE_LOG_H_
#define KVINDEXER_CORE_SEQUENCE_GATE_LOG_H_

#include <cstdint>
#include <functional>
#include <string_view>

#include "common/doubling_throttle.h"
#include "common/log_budget.h"
#include "spdlog/common.h"

namespace kvindexer {

inline constexpr std::string_view kUnconfiguredLogMessage =
    "refusing gated apply: worker is not configured";
inline constexpr std::string_view kNotReadyLogMessage =
    "refusing gated apply: worker has no ready snapshot for this epoch";
inline constexpr std::string_view kGapLogMessage =
    "event sequence gap; placements cleared until a snapshot is installed";

class SequenceGateLog {
 public:
  // Receives each emitted line. Must be thread-safe.
  using Sink =
      std::function<void(spdlog::level::level_enum level, std::string_view)>;

  // Logs through spdlog's default logger, gaps within PerWorkerLogBudget().
  SequenceGateLog();
  // Logs to `sink`, gaps within `gap_budget` (every gap when null).
  // REQUIRES: `gap_budget`, if any, outlives this object.
  explicit SequenceGateLog(Sink sink, LogBudget* gap_budget = nullptr);
  SequenceGateLog(const SequenceGateLog&) = delete;
  SequenceGateLog& operator=(const SequenceGateLog&) = delete;

  void RecordUnconfigured(std::string_view worker_id);
  void RecordNotReady(std::string_view worker_id,
                      std::string_view worker_epoch);
  void RecordGap(std::string_view worker_id, uint64_t expected,
                 uint64_t received);

  uint64_t unconfigured_total() const { return unconfigured_.total(); }
  uint64_t not_ready_total() const { return not_ready_.total(); }

 private:
  Sink sink_;
  LogBudget* const gap_budget_;
  DoublingThrottle unconfigured_;
  DoublingThrottle not_ready_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_SEQUENCE_GATE_LOG_H_
