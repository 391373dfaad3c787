// How a replica takes part in snapshots (docs/fleet.md, "Configuration"):
// how often the lease holder writes one, how many are kept, and the lease's
// time to live. Each bad value is a start-up error naming its variable.
#ifndef KVINDEXER_REPLICA_SNAPSHOT_CONFIG_H_
#define KVINDEXER_REPLICA_SNAPSHOT_CONFIG_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "common/env.h"

namespace kvindexer::replica {

inline constexpr char kSnapshotIntervalVar[] =
    "KV_INDEXER_FLEET_SNAPSHOT_INTERVAL_MS";
inline constexpr char kSnapshotKeepVar[] = "KV_INDEXER_FLEET_SNAPSHOT_KEEP";
inline constexpr char kLeaseTtlVar[] = "KV_INDEXER_FLEET_LEASE_TTL_MS";

struct SnapshotConfig {
  // Between two snapshots of the lease holder; 0 turns snapshot writing
  // off on this replica (it still loads snapshots at start).
  uint32_t interval_ms = 60000;
  uint32_t keep = 2;  // snapshots kept; the log is trimmed behind the oldest
  uint32_t lease_ttl_ms = 15000;
};

[[nodiscard]] absl::StatusOr<SnapshotConfig> ParseSnapshotConfig(
    const EnvLookup& env);

}  // namespace kvindexer::replica

#endif  // KVINDEXER_REPLICA_SNAPSHOT_CONFIG_H_
