// The one deployment knob of robin_sharded_snapshot: when a shard's delta is
// merged into its base table (DESIGN.md, "Two layers").
//
//   KV_INDEXER_ROBIN_MERGE_MIN_DELTA  blocks a shard's delta may hold before
//                                     a merge is considered; default 1024.
//                                     0 merges after nearly every apply
//                                     (least memory, most writer work).
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_MERGE_CONFIG_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_MERGE_CONFIG_H_

#include <cstddef>

namespace kvindexer::robin {

inline constexpr char kMergeMinDeltaVariable[] =
    "KV_INDEXER_ROBIN_MERGE_MIN_DELTA";

// Reads the variable's value (`value` may be null: unset). On success stores
// the minimum delta in `*min_delta` (`fallback` when unset) and returns true;
// otherwise writes a message naming the variable into `error` and returns
// false. Accepts decimal digits only, at most 4294967295.
bool ParseMergeMinDelta(const char* value, size_t fallback, size_t* min_delta,
                        char* error, size_t error_size) noexcept;

class RobinShardedSnapshotBackend;

// What the plugin's create() does: a backend whose merge policy follows
// `min_delta_value` (the variable's value, or null when unset). Null, with a
// message in `error`, for a bad value or when out of memory.
RobinShardedSnapshotBackend* CreateConfiguredBackend(
    const char* min_delta_value, char* error, size_t error_size) noexcept;

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_MERGE_CONFIG_H_
