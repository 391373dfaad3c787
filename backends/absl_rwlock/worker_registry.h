// The workers map of the absl_rwlock backend: worker id -> { address,
// optional cache spec, holdings per tier } (docs/contract.md, "State model"),
// stored densely by
// ordinal. Ordinals are assigned in order of first sight and never reused;
// records are never deleted (the only exception is RemoveLast, which undoes
// an Add inside a failed Apply before anyone could see it).
//
// Holdings are the reverse index CLEAR_ALL_AT_TIER uses. Invariant between
// Apply calls: h is in Holdings(tier) of worker w iff block h has a placement
// (w, tier); an empty holdings set owns no memory.
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
  std::string id;
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

  // Appends a record for an id that is not registered yet and returns its
  // ordinal. May throw std::bad_alloc, in which case nothing changed.
  // REQUIRES: size() <= kMaxWorkerOrdinal.
  uint32_t Add(absl::string_view id);

  // Undoes the most recent Add.
  void RemoveLast() noexcept;

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

  uint64_t size() const noexcept { return records_.size(); }
  uint64_t MemoryBytes() const noexcept;

 private:
  std::vector<WorkerRecord> records_;
  absl::flat_hash_map<std::string, uint32_t> index_;
  uint64_t charged_bytes_ = 0;  // sum of records' charged_bytes
};

}  // namespace kvindexer::absl_rwlock

#endif  // KVINDEXER_BACKENDS_ABSL_RWLOCK_WORKER_REGISTRY_H_
