#include "replica/snapshot_config.h"

namespace kvindexer::replica {

absl::StatusOr<SnapshotConfig> ParseSnapshotConfig(const EnvLookup& env) {
  SnapshotConfig config;
  if (absl::Status s = ReadEnvUint32(
          env, kSnapshotIntervalVar, Uint32Syntax{.min = 0, .max = 86400000},
          "milliseconds in 1000..86400000, or 0 for no snapshot writing on "
          "this replica",
          &config.interval_ms);
      !s.ok()) {
    return s;
  }
  if (config.interval_ms != 0 && config.interval_ms < 1000) {
    return InvalidEnvValue(kSnapshotIntervalVar,
                           std::to_string(config.interval_ms),
                           "milliseconds in 1000..86400000, or 0 for no "
                           "snapshot writing on this replica");
  }
  if (absl::Status s = ReadEnvUint32(env, kSnapshotKeepVar,
                                     Uint32Syntax{.min = 1, .max = 100},
                                     "1..100 snapshots", &config.keep);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ReadEnvUint32(
          env, kLeaseTtlVar, Uint32Syntax{.min = 300, .max = 600000},
          "milliseconds in 300..600000, for example 15000",
          &config.lease_ttl_ms);
      !s.ok()) {
    return s;
  }
  return config;
}

}  // namespace kvindexer::replica
