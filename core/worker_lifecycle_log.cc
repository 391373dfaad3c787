#include "core/worker_lifecycle_log.h"

#include <utility>

#include "common/doubling_throttle.h"
#include "common/env.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace kvindexer {

WorkerLifecycleLog::WorkerLifecycleLog()
    : WorkerLifecycleLog(
          [](spdlog::level::level_enum level, std::string_view line) {
            spdlog::log(level, "{}", line);
          }) {}

WorkerLifecycleLog::WorkerLifecycleLog(Sink sink) : sink_(std::move(sink)) {}

void WorkerLifecycleLog::RecordExpired(std::string_view worker_id,
                                       std::chrono::nanoseconds silent_for,
                                       bool record_kept) {
  const auto silent_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(silent_for);
  sink_(spdlog::level::warn,
        fmt::format("{} worker={} silent_ms={} record={}",
                    kHeartbeatExpiredLogMessage, worker_id, silent_ms.count(),
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
  sink_(spdlog::level::warn,
        fmt::format("{} worker={} value={}", kMalformedHeartbeatLogMessage,
                    worker_id, QuoteEnvValue(value)));
}

void WorkerLifecycleLog::RecordRemovalFailure(std::string_view worker_id,
                                              RemovalReason reason,
                                              std::string_view error) {
  sink_(spdlog::level::err,
        fmt::format("{} worker={} reason={} error={}", kRemovalFailedLogMessage,
                    worker_id, RemovalReasonName(reason), error));
}

void WorkerLifecycleLog::RecordRemoved(std::string_view worker_id,
                                       RemovalReason reason) {
  // Configure and reload remove workers wholesale, and say so once.
  const auto level =
      reason == RemovalReason::kConfigure || reason == RemovalReason::kReload
          ? spdlog::level::debug
          : spdlog::level::info;
  sink_(level, fmt::format("{} worker={} reason={}", kWorkerRemovedLogMessage,
                           worker_id, RemovalReasonName(reason)));
}

}  // namespace kvindexer
