// Applies one validated batch to the absl_rwlock backend's tables with
// all-or-nothing effect, even when an allocation fails half way.
//
// The caller holds the exclusive lock, so no reader ever sees a batch in
// progress. What remains is a failure inside the batch (std::bad_alloc from a
// table or a placement list growing): the batch must then leave no trace.
// Apply runs in three phases:
//
//   1. Mutate. Actions run in order. Every change that a later failure would
//      have to take back is first written to an undo journal: block record
//      created, placement added, removed or re-masked, token_count changed,
//      holding added. Room for a journal entry is reserved before the change
//      it records, so a throw never leaves a change unrecorded.
//      Changes that cannot be undone without allocating are not made here
//      but queued: deleting block records, deleting hit counters and
//      removing holdings. A block that loses its last placement is instead
//      made logically deleted (no placements, token_count 0) and queued, so
//      later actions of the batch see exactly what sequential semantics
//      require (a re-REPORT starts from an unknown token_count).
//   2a. On a throw: replay the journal backwards. Every undo step only frees
//      or overwrites (a removed placement goes back into the capacity it
//      left), so rollback cannot fail. Result: kResourceExhausted (or
//      kInternal for any other exception) and the state as before the batch.
//   2b. Otherwise commit: set the worker's address and spec, then run the
//      queue, which only erases. Commit cannot fail.
//
// Thread safety: Apply needs the backend's exclusive lock; Warm reads only
// and needs the lock shared (several may run at once).
#ifndef KVINDEXER_BACKENDS_ABSL_RWLOCK_BATCH_APPLIER_H_
#define KVINDEXER_BACKENDS_ABSL_RWLOCK_BATCH_APPLIER_H_

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "block_table.h"
#include "hit_counter_table.h"
#include "kvindexer/backend.h"
#include "worker_registry.h"

namespace kvindexer::absl_rwlock {

class BatchApplier {
 public:
  // REQUIRES: the tables outlive the applier.
  BatchApplier(BlockTable* blocks, WorkerRegistry* workers,
               HitCounterTable* hits) noexcept
      : blocks_(blocks), workers_(workers), hits_(hits) {}

  // REQUIRES: `batch` passed kit::CheckApplyBatch (kvindexer/backend_kit.h);
  // `address` holds batch.worker_address. Consumes `address` on success.
  BackendStatus Apply(const ApplyBatchView& batch,
                      std::string& address) noexcept;

  // Reads most of what Apply(batch) will read (each reported or revoked
  // hash's slot and placement list, and an existing worker's holdings of
  // its tier) and changes nothing, so that those cache misses are taken
  // under a shared lock, beside queries, and Apply's exclusive section finds
  // the lines in cache. Not read ahead: CLEAR_ALL_AT_TIER's walk, hit
  // counters, and a table's growth, which Apply still does exclusively.
  // REQUIRES: a shared or exclusive lock on the tables.
  void Warm(const ApplyBatchView& batch) const noexcept;

  // Heap held by the reusable journal and queue between calls.
  uint64_t MemoryBytes() const noexcept;

 private:
  enum class UndoKind : uint8_t {
    kBlockCreated,
    kPlacementAdded,
    kPlacementRemoved,
    kMaskChanged,
    kTokenCountChanged,
    kHoldingAdded,
  };
  struct Undo {
    int64_t hash;
    uint32_t key;    // placement key, or the tier for kHoldingAdded
    uint32_t value;  // old mask or old token_count
    uint32_t index;  // position of a removed placement
    UndoKind kind;
  };
  // A placement (worker, tier) of `hash` removed during the batch.
  struct Removal {
    int64_t hash;
    uint32_t tier;
    bool emptied;  // the removal took the block's last placement
  };

  // Phase 1 steps. They may throw std::bad_alloc.
  void Report(uint32_t worker, uint32_t tier, int64_t hash, uint32_t mask,
              uint32_t size);
  void Revoke(uint32_t worker, uint32_t tier, int64_t hash);
  void ClearTier(uint32_t worker, uint32_t tier);

  void Rollback(uint32_t worker) noexcept;
  void Commit(uint32_t worker, const ApplyBatchView& batch,
              std::string& address) noexcept;
  // Drops buffers that one huge batch blew up, so they don't pin memory.
  void TrimBuffers() noexcept;

  BlockTable* blocks_;
  WorkerRegistry* workers_;
  HitCounterTable* hits_;
  std::vector<Undo> journal_;
  std::vector<Removal> removals_;
};

}  // namespace kvindexer::absl_rwlock

#endif  // KVINDEXER_BACKENDS_ABSL_RWLOCK_BATCH_APPLIER_H_
