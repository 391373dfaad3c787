// Maps a backend worker ordinal to a small per-query slot in O(1).
//
// Backends hand out worker ordinals that are small and dense (backend.h), so
// the map is a flat vector indexed by ordinal. An ordinal past kDenseLimit
// (never produced by a conforming backend) falls back to a hash map rather
// than allocating a huge vector. Not thread-safe; one map per query at a
// time (Clear makes it ready for the next one).
//
// Costs (docs/backend-abi.md, "ABI 1.1: removing a worker"): the vector is
// as long as the largest ordinal ever set, and only its growth touches all
// of it; Find and Set are O(1) and Clear costs the Sets since the last one.
// So a map kept between queries (PrefixQuery's, RunMatch's; one per thread)
// costs each query the workers it meets, and its memory follows the largest
// ordinal. That is bounded by the workers present, not the workers ever
// seen, as long as the backend reuses freed ordinals before it takes new
// ones: ABI 1.0 backends never free one (their records stay), and ABI 1.1
// backends should hand out the lowest free one, as absl_rwlock does.
#ifndef KVINDEXER_CORE_WORKER_SLOT_MAP_H_
#define KVINDEXER_CORE_WORKER_SLOT_MAP_H_

#include <stdint.h>

#include <vector>

#include "absl/container/flat_hash_map.h"

namespace kvindexer {

class WorkerSlotMap {
 public:
  static constexpr int32_t kNone = -1;
  static constexpr uint32_t kDenseLimit = 1u << 20;

  int32_t Find(uint32_t worker) const {
    if (worker < dense_.size()) return dense_[worker];
    if (worker < kDenseLimit || sparse_.empty()) return kNone;
    auto it = sparse_.find(worker);
    return it == sparse_.end() ? kNone : it->second;
  }

  // Forgets every mapping and keeps the storage for reuse. Costs the number
  // of Set calls since the last Clear, not the size of the dense vector
  // (which is as large as the largest ordinal ever set).
  void Clear() {
    for (const uint32_t worker : set_) dense_[worker] = kNone;
    set_.clear();
    sparse_.clear();
  }

  void Set(uint32_t worker, int32_t slot) {
    if (worker < kDenseLimit) {
      if (worker >= dense_.size()) Grow(worker);
      dense_[worker] = slot;
      set_.push_back(worker);
    } else {
      sparse_[worker] = slot;
    }
  }

 private:
  // Makes room for `worker`, at least doubling so that ordinals arriving in
  // increasing order cost few reallocations.
  void Grow(uint32_t worker) {
    size_t size = dense_.size() < kMinDense ? kMinDense : 2 * dense_.size();
    if (size <= worker) size = static_cast<size_t>(worker) + 1;
    if (size > kDenseLimit) size = kDenseLimit;
    dense_.resize(size, kNone);
  }

  static constexpr size_t kMinDense = 64;
  std::vector<int32_t> dense_;
  std::vector<uint32_t> set_;  // dense ordinals set since the last Clear
  absl::flat_hash_map<uint32_t, int32_t> sparse_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_WORKER_SLOT_MAP_H_
