// AbslRwlockBackend: the reference IndexBackend. Three abseil hash tables
// (blocks, workers, hit counters; docs/contract.md, "State model") behind ONE
// reader/writer lock, an absl::Mutex (rw_lock.h):
//
//   Apply, Match with count_as_hit,
//   RemoveWorker                        exclusive, for the whole call
//   Match without counting, PrefixScan,
//   HitCounts, GetStats,
//   CountPlacements                     shared, for the whole call
//   SetWriteMode                        exclusive (it only records the mode)
//
// so every call sees one consistent snapshot and an Apply is all or nothing.
// Visitor callbacks run while the lock is held; a visitor must not call back
// into the backend.
//
// Every method is noexcept. Allocation failures and any other exception are
// caught inside and come back as kResourceExhausted or kInternal; a failed
// Apply or counting Match leaves the state as it was (see batch_applier.h).
#ifndef KVINDEXER_BACKENDS_ABSL_RWLOCK_ABSL_RWLOCK_BACKEND_H_
#define KVINDEXER_BACKENDS_ABSL_RWLOCK_ABSL_RWLOCK_BACKEND_H_

#include <stdint.h>

#include "absl/base/thread_annotations.h"
#include "batch_applier.h"
#include "block_table.h"
#include "hit_counter_table.h"
#include "kvindexer/backend.h"
#include "rw_lock.h"
#include "worker_registry.h"

namespace kvindexer::absl_rwlock {

class AbslRwlockBackend final : public IndexBackend {
 public:
  AbslRwlockBackend() noexcept;
  ~AbslRwlockBackend() override = default;
  AbslRwlockBackend(const AbslRwlockBackend&) = delete;
  AbslRwlockBackend& operator=(const AbslRwlockBackend&) = delete;

  BackendStatus Apply(const ApplyBatchView& batch) noexcept override;
  BackendStatus Match(HashSpan hashes, bool count_as_hit,
                      BlockVisitor* visitor) noexcept override;
  BackendStatus PrefixScan(HashSpan hashes,
                           BlockVisitor* visitor) noexcept override;
  BackendStatus HitCounts(HashSpan hashes, uint64_t* counts) noexcept override;
  void GetStats(BackendStats* stats) noexcept override;
  BackendStatus RemoveWorker(StringView worker_id,
                             uint32_t* existed) noexcept override;
  BackendStatus CountPlacements(StringView worker_id, uint64_t* counts_by_tier,
                                uint32_t* existed) noexcept override;
  // ABI 1.4. Every mutation takes the writer lock either way, so a bulk
  // load changes nothing here; the mode is only checked and remembered.
  BackendStatus SetWriteMode(WriteMode mode) noexcept override;

  // Test hook: sets the hit counter of `hash` to `count` whether or not the
  // block exists. Not part of the ABI.
  BackendStatus SetHitCountForTest(int64_t hash, uint64_t count) noexcept;

 private:
  // Visits `hashes` in order. REQUIRES: mu_ held (either mode).
  BackendStatus Visit(HashSpan hashes, BlockVisitor* visitor) const noexcept
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // +1 on every hash with placements, all or nothing.
  // REQUIRES: mu_ held exclusively.
  BackendStatus CountHits(HashSpan hashes) noexcept
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable RwLock mu_;
  BlockTable blocks_ ABSL_GUARDED_BY(mu_);
  WorkerRegistry workers_ ABSL_GUARDED_BY(mu_);
  HitCounterTable hits_ ABSL_GUARDED_BY(mu_);
  BatchApplier applier_ ABSL_GUARDED_BY(mu_);
  bool bulk_load_ ABSL_GUARDED_BY(mu_) = false;  // SetWriteMode's mode
};

}  // namespace kvindexer::absl_rwlock

#endif  // KVINDEXER_BACKENDS_ABSL_RWLOCK_ABSL_RWLOCK_BACKEND_H_
