// Logging set-up shared by kv-indexer-server, kv-indexer-bridge and the
// tools: one KV_INDEXER_LOG_LEVEL grammar and one line format.
//
// KV_INDEXER_LOG_LEVEL accepts trace, debug, info, warn (or warning), error,
// critical and off, in any letter case, with surrounding whitespace ignored.
// Unset or blank means info. Anything else is a configuration error.
//
// Every line goes to stderr as
//   2026-01-31T12:00:00.123456Z info  message
// (UTC timestamp with microseconds, level padded to five columns, coloured
// when stderr is a terminal) and is flushed as soon as it is written.
#ifndef KVINDEXER_COMMON_LOG_SETUP_H_
#define KVINDEXER_COMMON_LOG_SETUP_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "common/env.h"
#include "spdlog/common.h"

namespace kvindexer {

inline constexpr std::string_view kLogLevelVar = "KV_INDEXER_LOG_LEVEL";
inline constexpr spdlog::level::level_enum kDefaultLogLevel =
    spdlog::level::info;
// What KV_INDEXER_LOG_LEVEL accepts, for --help tables.
inline constexpr std::string_view kLogLevelValues =
    "trace, debug, info, warn, error, critical or off";
// The spdlog pattern of every line; timestamps are UTC.
inline constexpr std::string_view kLogPattern =
    "%Y-%m-%dT%H:%M:%S.%fZ %^%-5l%$ %v";

// Parses a level name (see above). Errors are InvalidArgument naming
// KV_INDEXER_LOG_LEVEL, quoting `value` and listing the accepted names. A
// blank value is an error here; LoadLogLevel treats it as unset.
[[nodiscard]] absl::StatusOr<spdlog::level::level_enum> ParseLogLevel(
    std::string_view value);

// Reads KV_INDEXER_LOG_LEVEL: kDefaultLogLevel when unset or blank.
[[nodiscard]] absl::StatusOr<spdlog::level::level_enum> LoadLogLevel(
    const EnvLookup& env);

// Makes a stderr logger named `program` the spdlog default, with kLogPattern
// in UTC, threshold `level` and a flush after every line. Call it once, early
// in main (before any thread logs); later spdlog::set_level changes only the
// threshold. Never throws for a name already in use: the logger is not
// registered by name.
void SetUpLogging(std::string_view program,
                  spdlog::level::level_enum level = kDefaultLogLevel);

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_LOG_SETUP_H_
