// Heap estimates for the containers the absl_rwlock backend uses. They feed
// BackendStats::memory_bytes and are O(1): each reads a capacity, never walks
// the contents.
#ifndef KVINDEXER_BACKENDS_ABSL_RWLOCK_TABLE_MEMORY_H_
#define KVINDEXER_BACKENDS_ABSL_RWLOCK_TABLE_MEMORY_H_

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

namespace kvindexer::absl_rwlock {

// Bytes of the backing array of an abseil Swiss table (flat_hash_map/set):
// one control byte per slot plus a cloned group of 16 and a sentinel,
// rounded to the slot alignment, then the slots. An empty table owns nothing.
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

// Makes room for `extra` more elements, growing geometrically so that a run
// of small calls stays amortised O(1). May throw std::bad_alloc; then `v` is
// unchanged.
template <typename T>
void EnsureRoom(std::vector<T>& v, size_t extra) {
  const size_t needed = v.size() + extra;
  if (needed <= v.capacity()) return;
  const size_t doubled = v.capacity() * 2;
  v.reserve(needed > doubled ? needed : doubled);
}

}  // namespace kvindexer::absl_rwlock

#endif  // KVINDEXER_BACKENDS_ABSL_RWLOCK_TABLE_MEMORY_H_
