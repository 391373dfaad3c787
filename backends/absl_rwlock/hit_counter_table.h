// The hit_counts map of the absl_rwlock backend: block hash -> cumulative
// hit count (docs/contract.md, "State model" and
// "MatchExternalKv > Hit counting"). A counter is created at 1, saturates at
// UINT64_MAX, and is deleted only together with its block record.
//
// Thread safety: none; the backend's lock guards every call.
#ifndef KVINDEXER_BACKENDS_ABSL_RWLOCK_HIT_COUNTER_TABLE_H_
#define KVINDEXER_BACKENDS_ABSL_RWLOCK_HIT_COUNTER_TABLE_H_

#include <stddef.h>
#include <stdint.h>

#include <limits>

#include "absl/container/flat_hash_map.h"
#include "swiss_table.h"

namespace kvindexer::absl_rwlock {

class HitCounterTable {
 public:
  bool Contains(int64_t hash) const noexcept { return map_.contains(hash); }

  // 0 when `hash` has no counter.
  uint64_t Get(int64_t hash) const noexcept {
    auto it = map_.find(hash);
    return it == map_.end() ? 0 : it->second;
  }

  // Guarantees that the next `fresh` insertions of new counters do not
  // allocate. May throw std::bad_alloc, in which case nothing changed.
  void Reserve(size_t fresh) { ReserveForInserts(map_, fresh); }

  // Adds one, creating the counter at 1 and saturating at UINT64_MAX.
  // REQUIRES: room reserved for a new counter (Reserve); then nothing here
  // allocates.
  void Increment(int64_t hash) {
    uint64_t& count = map_[hash];
    if (count != std::numeric_limits<uint64_t>::max()) ++count;
  }

  // Sets a counter directly. May throw std::bad_alloc. For tests.
  void Set(int64_t hash, uint64_t count) {
    if (!map_.contains(hash)) ReserveForInserts(map_, 1);
    map_[hash] = count;
  }

  void Erase(int64_t hash) noexcept { map_.erase(hash); }

  // Gives back capacity that deletions left unused (ShrinkIfSparse). May
  // throw std::bad_alloc, in which case nothing changed.
  void Compact() { ShrinkIfSparse(map_); }

  uint64_t size() const noexcept { return map_.size(); }
  uint64_t MemoryBytes() const noexcept { return SwissTableBytes(map_); }

 private:
  absl::flat_hash_map<int64_t, uint64_t> map_;
};

}  // namespace kvindexer::absl_rwlock

#endif  // KVINDEXER_BACKENDS_ABSL_RWLOCK_HIT_COUNTER_TABLE_H_
