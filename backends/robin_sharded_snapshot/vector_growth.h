// ReserveOneMore: room for one more element of a std::vector, grown
// geometrically. The writer reserves before a step's commit so that the
// commit cannot fail; std::vector::reserve(size() + 1) would grow the
// capacity by exactly one each time, so every reserve would copy the whole
// vector (libstdc++ allocates exactly what reserve asks for).
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_VECTOR_GROWTH_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_VECTOR_GROWTH_H_

#include <cstddef>
#include <vector>

namespace kvindexer::robin {

// Throws std::bad_alloc (the vector is then unchanged).
template <typename T>
void ReserveOneMore(std::vector<T>& v) {
  if (v.size() < v.capacity()) return;
  v.reserve(v.capacity() < 4 ? 4 : 2 * v.capacity());
}

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_VECTOR_GROWTH_H_
