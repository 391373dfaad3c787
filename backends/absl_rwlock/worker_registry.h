// The workers map of the absl_rwlock backend: worker id -> { address,
// optional cache spec, holdings per tier } (docs/contract.md, "State model"),
// stored densely by ordinal.
//
// Ordinals (ABI 1.1, docs/backend-abi.md): a new worker gets the LOWEST free
// ordinal, one that RemoveWorker freed, and a fresh one only when none is
// free. Ordinals therefore stay below the number of workers present at the
// busiest moment, never the number ever seen, and so do the tables a query
// sizes by ordinal (the host's WorkerSlotMap, BlockEmitter's bitset). The
// record vector is cut back to the highest live ordinal whenever the records
// at its end are freed.
//
// A free slot is a blank record (empty id; no heap). The free ordinals are a
// min-heap with lazy deletion: ordinals at or past records_.size() (slots cut
// off the end) are stale and skipped; since the heap's top is its smallest
// entry, a stale top means every entry is stale.
//
// Holdings are the reverse index CLEAR_ALL_AT_TIER and RemoveWorker use.
// Invariant between calls: h is in Holdings(tier) of worker w iff block h
// has a placement (w, tier); an empty holdings set owns no memory.
//
// Thread safety: none; the backend's lock guards every call.
#ifndef KVINDEXER_BACKENDS_ABSL_RWLOCK_WORKER_REGISTRY_H_
#define KVINDEXER_BACKENDS_ABSL_RWLOCK_WORKER_REGISTRY_H_

#include <stdint.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "kvindexer/backend.h"

namespace kvindexer::absl_rwlock {

using HoldingSet = absl::flat_hash_set<int64_t>;

struct WorkerRecord {
  std::string id;  // empty: the slot is free
  std::string address;
  uint32_t has_cache_spec = 0;
  CacheSpec cache_spec{};
  std::array<HoldingSet, kMaxTier> holdings;  // holdings[tier - 1]
  uint64_t charged_bytes = 0;  // heap bytes last added to the registry total

  // REQUIRES: 1 <= tier <= kMaxTier.
  HoldingSet& Holdings(uint32_t tier) { return holdings[tier - 1]; }
  const HoldingSet& Holdings(uint32_t tier) const { return holdings[tier - 1]; }
};

class WorkerRegistry {
 public:
  std::optional<uint32_t> Find(absl::string_view id) const noexcept;

  // True when Add has an ordinal <= kMaxWorkerOrdinal to give: a free one,
  // or room for one more at the end.
  bool CanAdd() const noexcept;

  // Registers an id that is not registered yet under the lowest free ordinal
  // and returns it. May throw std::bad_alloc, in which case nothing changed.
  // REQUIRES: CanAdd(); !id.empty().
  uint32_t Add(absl::string_view id);

  // Undoes an Add that nothing has been recorded under since (a failed Apply
  // rolling back). Never allocates.
  void UndoAdd(uint32_t ordinal) noexcept;

  // Makes sure the next Remove cannot allocate. May throw std::bad_alloc, in
  // which case nothing changed.
  void ReserveForRemove();

  // Deletes the record of a live ordinal and frees the ordinal. The caller
  // has already taken every placement of the worker out of the blocks (its
  // holdings are dropped unread). REQUIRES: ReserveForRemove() since the last
  // Remove.
  void Remove(uint32_t ordinal) noexcept;

  // Gives back capacity that removals left unused. May throw std::bad_alloc,
  // in which case nothing changed. Moves records (invalidates references).
  void Compact();

  WorkerRecord& at(uint32_t ordinal) noexcept { return records_[ordinal]; }
  const WorkerRecord& at(uint32_t ordinal) const noexcept {
    return records_[ordinal];
  }

  // The ABI view of a worker; valid while the record is neither changed nor
  // moved (that is, while the caller holds the backend's lock).
  WorkerView View(uint32_t ordinal) const noexcept;

  // Recomputes the heap charged for one worker's strings and holdings after
  // they changed. O(1).
  void Recharge(uint32_t ordinal) noexcept;

  // Live workers.
  uint64_t size() const noexcept { return index_.size(); }
  // One past the highest live ordinal (0 when there is none).
  uint32_t ordinal_bound() const noexcept {
    return static_cast<uint32_t>(records_.size());
  }
  uint64_t MemoryBytes() const noexcept;

 private:
  // The lowest free ordinal below records_.size(), if any.
  std::optional<uint32_t> LowestFree() const noexcept;
  // Drops the free records at the end of records_.
  void TrimFreeTail() noexcept;

  std::vector<WorkerRecord> records_;  // by ordinal; back() is live
  absl::flat_hash_map<std::string, uint32_t> index_;
  std::vector<uint32_t> free_;  // min-heap of freed ordinals, some stale
  uint64_t charged_bytes_ = 0;  // sum of records' charged_bytes
};

}  // namespace kvindexer::absl_rwlock

#endif  // KVINDEXER_BACKENDS_ABSL_RWLOCK_WORKER_REGISTRY_H_
