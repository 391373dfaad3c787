#include "batch_applier.h"

#include <exception>
#include <new>
#include <optional>
#include <utility>

#include "absl/strings/string_view.h"
#include "kvindexer/backend_kit.h"
#include "swiss_table.h"

namespace kvindexer::absl_rwlock {
namespace {

using kit::ErrorStatus;
using kit::OkStatus;

// Buffers above this many entries are released after the batch.
constexpr size_t kKeptBufferEntries = size_t{1} << 16;

// How many hashes ahead of the one being applied the tables' slots are
// fetched. A block map of millions of entries misses the cache on nearly
// every lookup; fetching ahead overlaps those misses, which shortens the
// time the batch holds the exclusive lock and queries wait.
constexpr size_t kPrefetchAhead = 8;

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

}  // namespace

BackendStatus BatchApplier::Apply(const ApplyBatchView& batch,
                                  std::string& address) noexcept {
  journal_.clear();
  removals_.clear();
  const absl::string_view id(batch.worker_id.data, batch.worker_id.size);
  std::optional<uint32_t> found = workers_->Find(id);
  const bool new_worker = !found.has_value();
  uint32_t worker = 0;
  if (new_worker && !workers_->CanAdd()) {
    return ErrorStatus(BackendCode::kResourceExhausted,
                       "worker limit reached (%u workers)",
                       kMaxWorkerOrdinal + 1);
  }
  bool added = false;
  const char* failure = nullptr;
  BackendCode failure_code = BackendCode::kOk;
  try {
    if (new_worker) {
      worker = workers_->Add(id);
      added = true;
    } else {
      worker = *found;
    }
    for (size_t a = 0; a < batch.action_count; ++a) {
      const ActionView& action = batch.actions[a];
      switch (action.type) {
        case kActionReport: {
          const bool has_masks = action.component_masks.size != 0;
          const bool has_sizes = action.block_sizes.size != 0;
          const HoldingSet& held = workers_->at(worker).Holdings(action.tier);
          for (size_t i = 0; i < action.hashes.size; ++i) {
            if (i + kPrefetchAhead < action.hashes.size) {
              const int64_t ahead = action.hashes.data[i + kPrefetchAhead];
              blocks_->Prefetch(ahead);
              held.prefetch(ahead);
            }
            Report(worker, action.tier, action.hashes.data[i],
                   has_masks ? action.component_masks.data[i] : 0,
                   has_sizes ? action.block_sizes.data[i] : 0);
          }
          break;
        }
        case kActionRevoke:
          for (size_t i = 0; i < action.hashes.size; ++i) {
            if (i + kPrefetchAhead < action.hashes.size) {
              blocks_->Prefetch(action.hashes.data[i + kPrefetchAhead]);
            }
            Revoke(worker, action.tier, action.hashes.data[i]);
          }
          break;
        case kActionClearAllAtTier:
          ClearTier(worker, action.tier);
          break;
        default:  // excluded by validation
          break;
      }
    }
  } catch (const std::bad_alloc&) {
    failure_code = BackendCode::kResourceExhausted;
    failure = "out of memory while applying the batch";
  } catch (const std::exception&) {
    failure_code = BackendCode::kInternal;
    failure = "unexpected exception while applying the batch";
  } catch (...) {
    failure_code = BackendCode::kInternal;
    failure = "unknown exception while applying the batch";
  }
  if (failure != nullptr) {
    // A throwing Add changed nothing and recorded nothing to undo.
    Rollback(worker);
    if (added) {
      workers_->UndoAdd(worker);
    } else if (!new_worker) {
      workers_->Recharge(worker);
    }
    TrimBuffers();
    return ErrorStatus(failure_code, "%s; nothing was applied", failure);
  }
  Commit(worker, batch, address);
  TrimBuffers();
  return OkStatus();
}

void BatchApplier::Warm(const ApplyBatchView& batch) const noexcept {
  const absl::string_view id(batch.worker_id.data, batch.worker_id.size);
  const WorkerRegistry& workers = *workers_;
  const std::optional<uint32_t> worker = workers.Find(id);
  // Summed and handed to an empty asm statement, so that the reads are not
  // optimised away (no store: concurrent callers share nothing).
  ptrdiff_t seen = 0;
  for (size_t a = 0; a < batch.action_count; ++a) {
    const ActionView& action = batch.actions[a];
    if (action.type != kActionReport && action.type != kActionRevoke) continue;
    const HoldingSet* held = worker.has_value()
                                 ? &workers.at(*worker).Holdings(action.tier)
                                 : nullptr;
    const uint32_t key =
        worker.has_value() ? PlacementKey(*worker, action.tier) : 0;
    for (size_t i = 0; i < action.hashes.size; ++i) {
      if (i + kPrefetchAhead < action.hashes.size) {
        const int64_t ahead = action.hashes.data[i + kPrefetchAhead];
        blocks_->Prefetch(ahead);
        if (held != nullptr) held->prefetch(ahead);
      }
      const int64_t hash = action.hashes.data[i];
      if (const BlockRecord* record =
              static_cast<const BlockTable*>(blocks_)->Find(hash)) {
        seen += record->Find(key);
      }
      if (held != nullptr) seen += held->contains(hash) ? 1 : 0;
    }
  }
  asm volatile("" : : "g"(seen));
}

void BatchApplier::Report(uint32_t worker, uint32_t tier, int64_t hash,
                          uint32_t mask, uint32_t size) {
  EnsureRoom(journal_, 4);
  bool created = false;
  BlockRecord& record = blocks_->FindOrCreate(hash, &created);
  if (created) journal_.push_back({hash, 0, 0, 0, UndoKind::kBlockCreated});
  const uint32_t key = PlacementKey(worker, tier);
  const ptrdiff_t at = record.Find(key);
  if (at >= 0) {
    PackedPlacement& p = record.placements[static_cast<size_t>(at)];
    if (p.mask != mask) {
      journal_.push_back({hash, key, p.mask, 0, UndoKind::kMaskChanged});
      p.mask = mask;
    }
  } else {
    blocks_->AddPlacement(record, PackedPlacement{key, mask});
    journal_.push_back({hash, key, 0, 0, UndoKind::kPlacementAdded});
  }
  if (size > 0 && size != record.token_count) {
    journal_.push_back(
        {hash, 0, record.token_count, 0, UndoKind::kTokenCountChanged});
    record.token_count = size;
  }
  HoldingSet& held = workers_->at(worker).Holdings(tier);
  if (!held.contains(hash)) {
    ReserveForInserts(held, 1);
    held.insert(hash);
    journal_.push_back({hash, tier, 0, 0, UndoKind::kHoldingAdded});
  }
}

void BatchApplier::Revoke(uint32_t worker, uint32_t tier, int64_t hash) {
  BlockRecord* record = blocks_->Find(hash);
  if (record == nullptr) return;
  const ptrdiff_t at = record->Find(PlacementKey(worker, tier));
  if (at < 0) return;
  EnsureRoom(journal_, 2);
  EnsureRoom(removals_, 1);
  const auto index = static_cast<size_t>(at);
  const PackedPlacement removed = blocks_->RemovePlacementAt(*record, index);
  journal_.push_back({hash, removed.key, removed.mask,
                      static_cast<uint32_t>(index),
                      UndoKind::kPlacementRemoved});
  const bool emptied = record->placements.empty();
  if (emptied && record->token_count != 0) {
    journal_.push_back(
        {hash, 0, record->token_count, 0, UndoKind::kTokenCountChanged});
    record->token_count = 0;
  }
  removals_.push_back({hash, tier, emptied});
}

void BatchApplier::ClearTier(uint32_t worker, uint32_t tier) {
  // Holdings only shrink at commit, so the set can be walked in place; it is
  // the "copy of the holdings" the contract asks for. Room for every
  // possible removal is made first, so the walk itself cannot throw.
  const HoldingSet& held = workers_->at(worker).Holdings(tier);
  EnsureRoom(journal_, 2 * held.size());
  EnsureRoom(removals_, held.size());
  for (int64_t hash : held) Revoke(worker, tier, hash);
}

void BatchApplier::Rollback(uint32_t worker) noexcept {
  for (auto it = journal_.rbegin(); it != journal_.rend(); ++it) {
    const Undo& undo = *it;
    if (undo.kind == UndoKind::kHoldingAdded) {
      workers_->at(worker).Holdings(undo.key).erase(undo.hash);
      continue;
    }
    BlockRecord* record = blocks_->Find(undo.hash);
    if (record == nullptr) continue;  // cannot happen: undo runs in reverse
    switch (undo.kind) {
      case UndoKind::kBlockCreated:
        blocks_->Erase(undo.hash);
        break;
      case UndoKind::kPlacementAdded: {
        const ptrdiff_t at = record->Find(undo.key);
        if (at >= 0) {
          blocks_->RemovePlacementAt(*record, static_cast<size_t>(at));
        }
        break;
      }
      case UndoKind::kPlacementRemoved:
        blocks_->RestorePlacementAt(*record, undo.index,
                                    PackedPlacement{undo.key, undo.value});
        break;
      case UndoKind::kMaskChanged: {
        const ptrdiff_t at = record->Find(undo.key);
        if (at >= 0) {
          record->placements[static_cast<size_t>(at)].mask = undo.value;
        }
        break;
      }
      case UndoKind::kTokenCountChanged:
        record->token_count = undo.value;
        break;
      case UndoKind::kHoldingAdded:
        break;
    }
  }
}

void BatchApplier::Commit(uint32_t worker, const ApplyBatchView& batch,
                          std::string& address) noexcept {
  WorkerRecord& w = workers_->at(worker);
  w.address.swap(address);
  w.has_cache_spec = batch.has_cache_spec != 0 ? 1 : 0;
  w.cache_spec = w.has_cache_spec ? batch.cache_spec : CacheSpec{};
  for (size_t i = 0; i < removals_.size(); ++i) {
    if (i + kPrefetchAhead < removals_.size()) {
      const Removal& ahead = removals_[i + kPrefetchAhead];
      blocks_->Prefetch(ahead.hash);
      w.Holdings(ahead.tier).prefetch(ahead.hash);
    }
    const Removal& removal = removals_[i];
    // A block emptied at any point of the batch lost its counter then, even
    // if a later action of the batch reported it again.
    if (removal.emptied) hits_->Erase(removal.hash);
    BlockRecord* record = blocks_->Find(removal.hash);
    const bool held_again =
        record != nullptr &&
        record->Find(PlacementKey(worker, removal.tier)) >= 0;
    if (!held_again) w.Holdings(removal.tier).erase(removal.hash);
    if (record == nullptr) continue;
    if (record->placements.empty()) {
      blocks_->Erase(removal.hash);
    } else {
      blocks_->ShrinkToInline(*record);
    }
  }
  for (HoldingSet& set : w.holdings) {
    if (set.empty() && set.capacity() != 0) HoldingSet().swap(set);
  }
  workers_->Recharge(worker);
}

void BatchApplier::TrimBuffers() noexcept {
  journal_.clear();
  removals_.clear();
  if (journal_.capacity() > kKeptBufferEntries) {
    std::vector<Undo>().swap(journal_);
  }
  if (removals_.capacity() > kKeptBufferEntries) {
    std::vector<Removal>().swap(removals_);
  }
}

uint64_t BatchApplier::MemoryBytes() const noexcept {
  return VectorHeapBytes(journal_) + VectorHeapBytes(removals_);
}

}  // namespace kvindexer::absl_rwlock
