#include "common/log_setup.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "common/absl_view.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace kvindexer {
namespace {

// Quoted in error messages; lists every name ParseLogLevel accepts.
constexpr std::string_view kLogLevelAccepted =
    "one of trace, debug, info, warn, error, critical, off (any letter case; "
    "warning is the same as warn)";

}  // namespace

absl::StatusOr<spdlog::level::level_enum> ParseLogLevel(
    std::string_view value) {
  const std::string name =
      absl::AsciiStrToLower(absl::StripAsciiWhitespace(AbslView(value)));
  if (name == "trace") return spdlog::level::trace;
  if (name == "debug") return spdlog::level::debug;
  if (name == "info") return spdlog::level::info;
  if (name == "warn" || name == "warning") return spdlog::level::warn;
  if (name == "error") return spdlog::level::err;
  if (name == "critical") return spdlog::level::critical;
  if (name == "off") return spdlog::level::off;
  return InvalidEnvValue(kLogLevelVar, value, kLogLevelAccepted);
}

absl::StatusOr<spdlog::level::level_enum> LoadLogLevel(const EnvLookup& env) {
  const std::optional<std::string> value = env(kLogLevelVar);
  if (!value || absl::StripAsciiWhitespace(*value).empty()) {
    return kDefaultLogLevel;
  }
  return ParseLogLevel(*value);
}

void SetUpLogging(std::string_view program, spdlog::level::level_enum level) {
  auto logger = std::make_shared<spdlog::logger>(
      std::string(program),
      std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  logger->set_pattern(std::string(kLogPattern), spdlog::pattern_time_type::utc);
  logger->set_level(level);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace kvindexer
