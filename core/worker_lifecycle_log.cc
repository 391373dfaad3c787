#include "core/worker_lifecycle_log.h"

#include <utility>

#include "common/doubling_throttle.h"
#include "common/log_text.h"
#include "core/stream_log_fields.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace kvindexer {

WorkerLifecycleLog::WorkerLifecycleLog()
    : WorkerLifecycleLog(
          [](spdlog::level::level_enum level, std::string_view line) {
            spdlog::log(level, "{}", line);
          },
          &PerWorkerLogBudget()) {}

WorkerLifecycleLog::WorkerLifecycleLog(Sink sink, LogBudget* budget)
    : sink_(std::move(sink)), budget_(budget) {}

void WorkerLifecycleLog::RecordExpired(std::string_view worker_id,
                                       std::chrono::nanoseconds silent_for,
                                       bool record_kept) {
  const auto silent_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(silent_for);
  LogWithinBudget(
      budget_, sink_, spdlog::level::warn,
      fmt::format("{} {} silent_ms={} record={}", kHeartbeatExpiredLogMessage,
                  StreamLogFields(worker_id), silent_ms.count(),
                  record_kept ? "kept" : "removed"));
}

void WorkerLifecycleLog::RecordRefusal(size_t census) {
  const uint64_t streak =
      refusal_streak_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (!IsPowerOfTwo(streak)) return;
  sink_(spdlog::level::warn,
        fmt::format("{} marked_workers={} refused_in_a_row={}",
                    kCensusRefusalLogMessage, census, streak));
}

void WorkerLifecycleLog::RecordMalformedHeartbeat(std::string_view worker_id,
                                                  std::string_view value) {
  LogWithinBudget(
      budget_, sink_, spdlog::level::warn,
      fmt::format("{} {} value=\"{}\"", kMalformedHeartbeatLogMessage,
                  StreamLogFields(worker_id), LogText(value)));
}

void WorkerLifecycleLog::RecordRemovalFailure(std::string_view worker_id,
                                              RemovalReason reason,
                                              std::string_view error) {
  sink_(spdlog::level::err,
        fmt::format("{} {} reason={} error={}", kRemovalFailedLogMessage,
                    StreamLogFields(worker_id), RemovalReasonName(reason),
                    LogText(error, kLogMessageBytes)));
}

void WorkerLifecycleLog::RecordRemoved(std::string_view worker_id,
                                       RemovalReason reason) {
  // Configure and reload remove workers wholesale, and say so once.
  const auto level =
      reason == RemovalReason::kConfigure || reason == RemovalReason::kReload
          ? spdlog::level::debug
          : spdlog::level::info;
  const std::string line =
      fmt::format("{} {} reason={}", kWorkerRemovedLogMessage,
                  StreamLogFields(worker_id), RemovalReasonName(reason));
  // A sweep removes as many workers as a client made and then left silent.
  LogWithinBudget(reason == RemovalReason::kLiveness ? budget_ : nullptr, sink_,
                  level, line);
}

}  // namespace kvindexer
