// How the writer's loops (pass one, catch-up, CLEAR, holdings compaction)
// prefetch ahead of the lookups they are about to make (DESIGN.md, "Reads
// and prefetching").
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_WRITER_PREFETCH_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_WRITER_PREFETCH_H_

#include <cstddef>
#include <cstdint>

#include "block_record.h"
#include "snapshot_copy.h"

namespace kvindexer::robin {

// How far ahead of its use a writer loop prefetches a bucket and the base
// directory word (kPrefetchDistance), and then the base entries the
// directory points to (kBasePrefetchDistance).
inline constexpr size_t kPrefetchDistance = 16;
inline constexpr size_t kBasePrefetchDistance = 8;

// Prefetches for the writer's lookup of hashes[i]. Always inlined (see
// BaseTable::PrefetchDirectory).
[[gnu::always_inline]] inline void PrefetchAhead(const SnapshotCopy& copy,
                                                 const int64_t* hashes,
                                                 size_t i, size_t n) {
  if (i + kPrefetchDistance < n) {
    copy.Prefetch(MixHash(hashes[i + kPrefetchDistance]));
  }
  if (i + kBasePrefetchDistance < n) {
    copy.PrefetchBase(MixHash(hashes[i + kBasePrefetchDistance]));
  }
}

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_WRITER_PREFETCH_H_
