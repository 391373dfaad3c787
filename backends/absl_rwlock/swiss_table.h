// Helpers for the abseil Swiss tables (flat_hash_map/set) the absl_rwlock
// backend keeps: growth that survives std::bad_alloc, and O(1) byte
// estimates for BackendStats::memory_bytes.
//
// Why growth needs care: in abseil 20220623 (Debian 12), raw_hash_set's
// in-place resize() stores the new capacity before it allocates the new
// array, so a throwing allocation leaves a table whose capacity no longer
// matches its array; any later lookup reads past it. The constructor that
// takes a bucket count has no such problem (a throwing constructor leaves no
// object behind). So a table must never grow in place: before inserting,
// ReserveForInserts makes sure the coming inserts cannot trigger a resize,
// building a larger table on the side when they could.
#ifndef KVINDEXER_BACKENDS_ABSL_RWLOCK_SWISS_TABLE_H_
#define KVINDEXER_BACKENDS_ABSL_RWLOCK_SWISS_TABLE_H_

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <utility>
#include <vector>

namespace kvindexer::absl_rwlock {

// Makes the next `count` insertions of new keys into `table` free of
// resizes (and so of allocations). May throw std::bad_alloc; `table` is then
// unchanged.
//
// An insertion that finds no free slot calls rehash_and_grow_if_necessary,
// which resizes unless capacity > 16 (one group) and size * 32 <=
// capacity * 25; in that case it only drops tombstones in place, without
// allocating. So the table is kept at capacity > 16 and at most 25/32 full
// counting the coming inserts. The effective maximum load factor is thus
// 78% instead of abseil's 87.5%.
template <typename Table>
void ReserveForInserts(Table& table, size_t count) {
  const uint64_t capacity = table.capacity();
  const uint64_t wanted = uint64_t{table.size()} + count;
  if (capacity > 16 && wanted * 32 <= capacity * 25) return;
  uint64_t buckets = wanted * 32 / 25 + 1;
  if (buckets < 31) buckets = 31;
  Table bigger(buckets);  // may throw; `table` untouched
  for (auto it = table.begin(); it != table.end(); ++it) {
    // Room is reserved, so the table itself does not allocate; a string key
    // is copied (a const key cannot be moved), which may throw, and leaves
    // `table` intact.
    bigger.insert(std::move(*it));
  }
  table.swap(bigger);
}

// Gives back the capacity of a table that deletions left sparse: when a table
// at most 5/8 full would be smaller than `table`, rebuilds it at that size
// on the side (the only safe way to resize, see above) and swaps it in.
// Returns true when it did. O(1) when nothing is to be done, else O(size).
// May throw std::bad_alloc; `table` is then unchanged.
//
// The rebuilt table is between 5/16 and 5/8 full, so before the next rebuild
// either half of its entries are erased or ReserveForInserts grows it (past
// 25/32), after at least capacity / 8 inserts: every O(size) rebuild is
// paid for by O(size) earlier operations, and a workload hovering at one
// size does not rebuild over and over.
template <typename Table>
bool ShrinkIfSparse(Table& table) {
  const uint64_t capacity = table.capacity();
  if (capacity <= 31) return false;
  const uint64_t size = table.size();
  // Buckets for a load of at most 5/8. abseil rounds a bucket count up to the
  // next 2^k - 1, so the rebuilt table is smaller only when this is at most
  // half the capacity.
  uint64_t buckets = size * 8 / 5 + 1;
  if (buckets < 31) buckets = 31;
  if (buckets > capacity / 2) return false;
  Table smaller(buckets);  // may throw; `table` untouched
  for (auto it = table.begin(); it != table.end(); ++it) {
    // As in ReserveForInserts: only a copied string key may throw.
    smaller.insert(std::move(*it));
  }
  table.swap(smaller);
  return true;
}

// Bytes of the backing array of a Swiss table: one control byte per slot
// plus a cloned group of 16 and a sentinel, rounded to the slot alignment,
// then the slots. An empty table owns nothing.
template <typename Table>
uint64_t SwissTableBytes(const Table& table) {
  using Value = typename Table::value_type;
  const uint64_t capacity = table.capacity();
  if (capacity == 0) return 0;
  constexpr uint64_t kAlign = alignof(Value);
  const uint64_t control = (capacity + 1 + 15 + kAlign - 1) & ~(kAlign - 1);
  return control + capacity * sizeof(Value);
}

// Heap bytes of a std::string: nothing while it fits the small buffer.
inline uint64_t StringHeapBytes(const std::string& s) {
  static const size_t kSmallCapacity = std::string().capacity();
  return s.capacity() > kSmallCapacity ? s.capacity() + 1 : 0;
}

template <typename T>
uint64_t VectorHeapBytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

}  // namespace kvindexer::absl_rwlock

#endif  // KVINDEXER_BACKENDS_ABSL_RWLOCK_SWISS_TABLE_H_
