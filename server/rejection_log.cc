#include "server/rejection_log.h"

#include <string>
#include <utility>

#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace kvindexer {
namespace {

int64_t Milliseconds(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

}  // namespace

RejectionLog::RejectionLog()
    : RejectionLog([](spdlog::level::level_enum level, std::string_view line) {
        spdlog::log(level, "{}", line);
      }) {}

RejectionLog::RejectionLog(Sink sink) : sink_(std::move(sink)) {}

void RejectionLog::RecordShed(std::chrono::nanoseconds waited,
                              std::chrono::nanoseconds budget) {
  const uint64_t total = shed_.Count();
  if (total == 0) return;
  sink_(
      spdlog::level::info,
      fmt::format("{} shed_total={} waited_ms={} budget_ms={}", kShedLogMessage,
                  total, Milliseconds(waited), Milliseconds(budget)));
}

void RejectionLog::RecordOverload() {
  const uint64_t total = rejected_.Count();
  if (total == 0) return;
  sink_(spdlog::level::warn,
        fmt::format("{} rejected_total={}", kOverloadLogMessage, total));
}

}  // namespace kvindexer
