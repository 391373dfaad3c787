#include "core/sequence_gate_log.h"

#include <utility>

#include "common/log_text.h"
#include "core/stream_log_fields.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace kvindexer {

SequenceGateLog::SequenceGateLog()
    : SequenceGateLog(
          [](spdlog::level::level_enum level, std::string_view line) {
            spdlog::log(level, "{}", line);
          },
          &PerWorkerLogBudget()) {}

SequenceGateLog::SequenceGateLog(Sink sink, LogBudget* gap_budget)
    : sink_(std::move(sink)), gap_budget_(gap_budget) {}

void SequenceGateLog::RecordUnconfigured(std::string_view worker_id) {
  const uint64_t total = unconfigured_.Count();
  if (total == 0) return;
  sink_(spdlog::level::info,
        fmt::format("{} {} refused_total={}", kUnconfiguredLogMessage,
                    StreamLogFields(worker_id), total));
}

void SequenceGateLog::RecordNotReady(std::string_view worker_id,
                                     std::string_view worker_epoch) {
  const uint64_t total = not_ready_.Count();
  if (total == 0) return;
  sink_(spdlog::level::info,
        fmt::format("{} {} epoch={} refused_total={}", kNotReadyLogMessage,
                    StreamLogFields(worker_id), LogText(worker_epoch), total));
}

void SequenceGateLog::RecordGap(std::string_view worker_id, uint64_t expected,
                                uint64_t received) {
  LogWithinBudget(gap_budget_, sink_, spdlog::level::warn,
                  fmt::format("{} {} expected={} received={}", kGapLogMessage,
                              StreamLogFields(worker_id), expected, received));
}

}  // namespace kvindexer
