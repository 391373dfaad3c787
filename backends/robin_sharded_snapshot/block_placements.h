// Reading a BlockRecord's placements (block_record.h), whether they are
// packed into the record or in a spill array (spill_arena.h). Used by the
// writer, the readers and holdings compaction alike.
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_BLOCK_PLACEMENTS_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_BLOCK_PLACEMENTS_H_

#include <cstdint>

#include "block_record.h"
#include "kvindexer/backend.h"
#include "spill_arena.h"

namespace kvindexer::robin {

// The number of placements of `record`. REQUIRES: !record.tombstone().
inline uint32_t CountOf(const BlockRecord& record) {
  return record.spilled() ? SpillArena::Count(record.spill()) : 1;
}

// The placements of `record`; a single inline one is unpacked into `*single`.
// REQUIRES: !record.tombstone().
inline const Placement* PlacementsOf(const BlockRecord& record,
                                     Placement* single) {
  if (record.spilled()) return record.spill();
  *single = record.single();
  return single;
}

// Position of `key` in p[0..n), sorted by PlacementKey.
inline uint32_t LowerBound(const Placement* p, uint32_t n, uint32_t key) {
  uint32_t i = 0;
  while (i < n && PlacementKey(p[i]) < key) ++i;
  return i;
}

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_BLOCK_PLACEMENTS_H_
