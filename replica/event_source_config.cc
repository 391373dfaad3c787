#include "replica/event_source_config.h"

namespace kvindexer::replica {
namespace {

constexpr std::string_view kEventSourceAccepted =
    "grpc (clients call the mutation RPCs) or jetstream (follow the fleet "
    "event log on NATS JetStream)";
constexpr std::string_view kMaxLagAccepted =
    "a positive integer of log records (1..4294967295), for example 10000";
constexpr Uint32Syntax kMaxLagSyntax{.min = 1};
constexpr std::string_view kMaxSilenceAccepted =
    "milliseconds in 500..86400000, for example 10000, or 0 to keep serving "
    "however long the fleet event log does not answer";

constexpr std::string_view kLineAWritesAccepted =
    "1 (a replica writes line-A writes through to the fleet event log) or 0 "
    "(it refuses them, as every other write)";

constexpr std::string_view kOpenAttemptsAccepted =
    "an integer in 1..20 (tries to open the fleet event log at start), for "
    "example 6";

}  // namespace

absl::StatusOr<EventSource> ParseEventSource(std::string_view value) {
  if (value == "grpc") return EventSource::kGrpc;
  if (value == "jetstream") return EventSource::kJetStream;
  return InvalidEnvValue(kEventSourceVar, value, kEventSourceAccepted);
}

absl::StatusOr<uint64_t> ParseFleetMaxLagRecords(std::string_view value) {
  auto n = ParseEnvUint32(kFleetMaxLagRecordsVar, value, kMaxLagSyntax,
                          kMaxLagAccepted);
  if (!n.ok()) return n.status();
  return uint64_t{*n};
}

absl::StatusOr<std::chrono::milliseconds> ParseFleetMaxSilenceMs(
    std::string_view value) {
  auto n = ParseEnvUint32(
      kFleetMaxSilenceMsVar, value,
      Uint32Syntax{.max = static_cast<uint32_t>(kMaxFleetMaxSilence.count())},
      kMaxSilenceAccepted);
  if (!n.ok()) return n.status();
  const std::chrono::milliseconds bound(*n);
  if (bound.count() != 0 && bound < kMinFleetMaxSilence) {
    return InvalidEnvValue(kFleetMaxSilenceMsVar, value, kMaxSilenceAccepted);
  }
  return bound;
}

absl::StatusOr<bool> ParseFleetLineAWrites(std::string_view value) {
  if (value == "1") return true;
  if (value == "0") return false;
  return InvalidEnvValue(kFleetLineAWritesVar, value, kLineAWritesAccepted);
}

absl::StatusOr<uint32_t> ParseFleetOpenAttempts(std::string_view value) {
  return ParseEnvUint32(kFleetOpenAttemptsVar, value,
                        Uint32Syntax{.min = 1, .max = kMaxFleetOpenAttempts},
                        kOpenAttemptsAccepted);
}

absl::StatusOr<EventSourceConfig> LoadEventSourceConfig(const EnvLookup& env) {
  EventSourceConfig config;
  if (auto v = env(kEventSourceVar)) {
    auto source = ParseEventSource(*v);
    if (!source.ok()) return source.status();
    config.source = *source;
  }
  if (auto v = env(kFleetMaxLagRecordsVar)) {
    auto n = ParseFleetMaxLagRecords(*v);
    if (!n.ok()) return n.status();
    config.max_lag_records = *n;
  }
  if (auto v = env(kFleetMaxSilenceMsVar)) {
    auto bound = ParseFleetMaxSilenceMs(*v);
    if (!bound.ok()) return bound.status();
    config.max_silence = *bound;
  }
  if (auto v = env(kFleetLineAWritesVar)) {
    auto writes = ParseFleetLineAWrites(*v);
    if (!writes.ok()) return writes.status();
    config.line_a_writes = *writes;
  }
  if (auto v = env(kFleetOpenAttemptsVar)) {
    auto attempts = ParseFleetOpenAttempts(*v);
    if (!attempts.ok()) return attempts.status();
    config.open_attempts = *attempts;
  }
  auto snapshots = ParseSnapshotConfig(env);
  if (!snapshots.ok()) return snapshots.status();
  config.snapshots = *snapshots;
  if (config.follows_log()) {
    auto log = fleet::ParseEventLogConfig(env);
    if (!log.ok()) return log.status();
    config.log = *std::move(log);
  }
  return config;
}

std::string_view EventSourceName(EventSource source) {
  return source == EventSource::kJetStream ? "jetstream" : "grpc";
}

}  // namespace kvindexer::replica
