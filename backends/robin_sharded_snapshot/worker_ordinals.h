// WorkerOrdinals: which worker ordinals are free, for the writer.
//
// A new worker takes the lowest free ordinal, so ordinals stay dense: the
// tables indexed by ordinal (WorkerTable, the writer's per-worker state) are
// as long as the most workers present at once, not as the workers ever seen.
// A released ordinal goes into a min-heap; Take prefers it to a fresh one.
// Reuse is safe for readers because an ordinal is released only together with
// the removal of every placement that names it (DESIGN.md, "Workers").
//
// Thread safety: none; the writer (under the writer mutex) owns it.
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_WORKER_ORDINALS_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_WORKER_ORDINALS_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "vector_growth.h"

namespace kvindexer::robin {

class WorkerOrdinals {
 public:
  // The ordinal the next Take returns.
  uint32_t Next() const { return free_.empty() ? end_ : free_.front(); }
  // Takes Next(). Never allocates.
  void Take() noexcept {
    if (free_.empty()) {
      ++end_;
      return;
    }
    std::pop_heap(free_.begin(), free_.end(), std::greater<>());
    free_.pop_back();
  }
  // Makes room so that the next Release cannot fail. Throws std::bad_alloc.
  void ReserveRelease() { ReserveOneMore(free_); }
  // Frees `ordinal`. REQUIRES: it was taken and not released since, and
  // ReserveRelease() was called after the last Release.
  void Release(uint32_t ordinal) noexcept {
    free_.push_back(ordinal);
    std::push_heap(free_.begin(), free_.end(), std::greater<>());
  }

  // One past the highest ordinal ever taken.
  uint32_t end() const { return end_; }
  size_t free_count() const { return free_.size(); }
  uint64_t bytes() const { return free_.capacity() * sizeof(free_[0]); }

 private:
  std::vector<uint32_t> free_;  // a min-heap
  uint32_t end_ = 0;
};

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_WORKER_ORDINALS_H_
