// RobinShardedSnapshotBackend's writer, pass one (DESIGN.md, "Writes"):
// Apply checks the batch, takes the writer mutex, upserts the worker, runs the
// actions on the non-live copy (REPORT, REVOKE, CLEAR_ALL_AT_TIER through the
// holdings logs) and hands over to Publish (publish.cc) and the merges
// (delta_merge.cc). Also the holdings logs' compaction after an apply.
#include "robin_backend.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "block_placements.h"
#include "kvindexer/backend_kit.h"
#include "vector_growth.h"
#include "worker_table.h"
#include "writer_prefetch.h"

namespace kvindexer::robin {
namespace {

using kit::ErrorStatus;
using kit::OkStatus;

}  // namespace

BackendStatus RobinShardedSnapshotBackend::Apply(
    const ApplyBatchView& batch) noexcept {
  const BackendStatus check = kit::CheckApplyBatch(batch);
  if (check.code != BackendCode::kOk) return check;
  std::lock_guard<std::mutex> lock(writer_mu_);
  if (BackendStatus ready = WriterReady(); ready.code != BackendCode::kOk) {
    return ready;
  }
  try {
    return ApplyLocked(batch);
  } catch (const std::bad_alloc&) {
    return ErrorStatus(BackendCode::kResourceExhausted,
                       "out of memory applying the batch");
  }
}

BackendStatus RobinShardedSnapshotBackend::ApplyLocked(
    const ApplyBatchView& batch) {
  SnapshotCopy& back = copies_[1 - gate_.live()];

  // Step 1: the worker. A new worker takes the lowest free ordinal; a new
  // worker or a changed address or spec prepares a new record, which the
  // commit below puts in the non-live copy's table. Nothing reader-visible
  // changes yet.
  const std::string_view id(batch.worker_id.data, batch.worker_id.size);
  const std::string_view address(batch.worker_address.data,
                                 batch.worker_address.size);
  uint32_t ordinal;
  bool new_worker = false;
  if (auto it = registry_.find(id); it != registry_.end()) {
    ordinal = it->second;
  } else {
    if (ordinals_.Next() > kMaxWorkerOrdinal) {
      return ErrorStatus(BackendCode::kResourceExhausted,
                         "too many workers (the limit is %u)",
                         kMaxWorkerOrdinal + 1);
    }
    ordinal = ordinals_.Next();
    new_worker = true;
  }
  std::unique_ptr<WorkerRecord> new_record;
  if (new_worker || records_[ordinal]->address != address ||
      !SameSpec(*records_[ordinal], batch)) {
    new_record = std::make_unique<WorkerRecord>();
    new_record->id.assign(id);
    new_record->address.assign(address);
    new_record->has_cache_spec = batch.has_cache_spec != 0 ? 1 : 0;
    if (batch.has_cache_spec != 0) new_record->cache_spec = batch.cache_spec;
    // Reserve everything the commit below needs so that it cannot fail.
    back.workers.Reserve(ordinal);
    ReserveOneMore(worker_changes_);
    ReserveOneMore(retired_records_);
  }
  if (new_worker) {
    if (ordinal == worker_states_.size()) {
      ReserveOneMore(worker_states_);
      ReserveOneMore(records_);
      worker_states_.emplace_back();
      records_.emplace_back();
    }
    worker_states_[ordinal] = std::make_unique<WorkerState>();
    try {
      registry_.insert({std::string(id), ordinal});
    } catch (const std::bad_alloc&) {
      worker_states_[ordinal].reset();
      throw;
    }
  }
  WorkerState& state = *worker_states_[ordinal];
  const uint64_t holdings_before = HoldingsBytes(state);

  // Step 2: pass one on the non-live copy.
  const std::array<uint64_t, kMaxTier + 1> saved_live = state.live;
  touched_.clear();
  counted_.clear();
  worker_changes_.clear();
  try {
    RunActions(batch, ordinal, state, back);
  } catch (const std::bad_alloc&) {
    if (bulk_) {
      // A bulk load keeps no second copy to roll back from (backend.h
      // allows INTERNAL here).
      poisoned_ = true;
    } else {
      try {
        RollBack(state, saved_live);
      } catch (const std::bad_alloc&) {
        poisoned_ = true;
      }
    }
    if (new_worker) {
      registry_.erase(id);
      worker_states_[ordinal].reset();  // frees its logs too
    } else {
      // The logs may have grown (an entry logged before the failure stays:
      // the log is lazy, a stale entry revokes nothing).
      holdings_bytes_ =
          holdings_bytes_ + HoldingsBytes(state) - holdings_before;
    }
    UpdateMemory();
    if (poisoned_) {
      // The host's rule (include/kvindexer/backend.h, BackendCode): INTERNAL
      // from a mutation means this backend cannot continue.
      return ErrorStatus(BackendCode::kInternal,
                         "out of memory applying the batch, and again undoing "
                         "it: the writer copy is inconsistent; recreate the "
                         "backend");
    }
    return ErrorStatus(BackendCode::kResourceExhausted,
                       "out of memory applying the batch; nothing changed");
  }
  holdings_bytes_ = holdings_bytes_ + HoldingsBytes(state) - holdings_before;

  if (touched_.empty() && new_record == nullptr) {
    // Nothing reader-visible changed: no need to publish.
    CompactHoldings(ordinal, state);
    UpdateMemory();
    return OkStatus();
  }

  // Step 3: publish. Commit the worker first (cannot fail: reserved above).
  if (new_record != nullptr) {
    worker_bytes_ += RecordBytes(*new_record);
    if (new_worker) {
      ordinals_.Take();
      worker_bytes_ += StringHeapBytes(registry_.find(id)->first);
    } else {
      worker_bytes_ -= RecordBytes(*records_[ordinal]);
      retired_records_.push_back(std::move(records_[ordinal]));
    }
    back.workers.Set(ordinal, new_record.get());
    worker_changes_.push_back(ordinal);
    records_[ordinal] = std::move(new_record);
  }
  Publish();
  if (!pending_sync_) {
    CompactHoldings(ordinal, state);
    MergeLargeDeltas();
  }
  UpdateMemory();
  return OkStatus();
}

BackendStatus RobinShardedSnapshotBackend::WriterReady() noexcept {
  if (poisoned_) {
    return ErrorStatus(BackendCode::kInternal,
                       "a previous allocation failure left the writer copy "
                       "inconsistent; recreate the backend");
  }
  if (!FinishPendingSync()) {
    return ErrorStatus(BackendCode::kResourceExhausted,
                       "out of memory completing the previous apply");
  }
  return OkStatus();
}

void RobinShardedSnapshotBackend::RunActions(const ApplyBatchView& batch,
                                             uint32_t ordinal,
                                             WorkerState& state,
                                             SnapshotCopy& back) {
  for (size_t a = 0; a < batch.action_count; ++a) {
    const ActionView& action = batch.actions[a];
    const uint32_t tier = action.tier;
    const uint32_t key = PlacementKey(ordinal, tier);
    HoldingLog* log = state.scanned[tier] ? nullptr : &state.holdings[tier];
    switch (action.type) {
      case kActionReport: {
        const bool has_masks = action.component_masks.size != 0;
        const bool has_sizes = action.block_sizes.size != 0;
        for (size_t i = 0; i < action.hashes.size; ++i) {
          PrefetchAhead(back, action.hashes.data, i, action.hashes.size);
          const uint32_t mask = has_masks ? action.component_masks.data[i] : 0;
          const uint32_t size = has_sizes ? action.block_sizes.data[i] : 0;
          if (ReportPlacement(back, action.hashes.data[i], key, mask, size,
                              log)) {
            ++state.live[tier];
          }
        }
        break;
      }
      case kActionRevoke:
        for (size_t i = 0; i < action.hashes.size; ++i) {
          PrefetchAhead(back, action.hashes.data, i, action.hashes.size);
          if (RevokePlacement(back, action.hashes.data[i], key)) {
            --state.live[tier];
          }
        }
        break;
      case kActionClearAllAtTier: {
        // Clears in a row (a worker's restart clears each of its tiers)
        // are one step: their scanned tiers share one scan of the index.
        uint32_t tiers = 1u << tier;
        while (a + 1 < batch.action_count &&
               batch.actions[a + 1].type == kActionClearAllAtTier) {
          ++a;
          tiers |= 1u << batch.actions[a].tier;
        }
        ClearTiers(ordinal, tiers, state, back);
        break;
      }
    }
  }
}

void RobinShardedSnapshotBackend::ClearTiers(uint32_t ordinal, uint32_t tiers,
                                             WorkerState& state,
                                             SnapshotCopy& back) {
  uint32_t scanned = 0;
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    if ((tiers >> tier & 1u) != 0 && state.live[tier] != 0 &&
        state.scanned[tier]) {
      scanned |= 1u << tier;
    }
  }
  HeldByTier held;
  if (scanned != 0) held = ScanForKeys(back, ordinal, scanned, state.live);
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    if ((tiers >> tier & 1u) == 0 || state.live[tier] == 0) continue;
    const uint32_t key = PlacementKey(ordinal, tier);
    if ((scanned >> tier & 1u) != 0) {
      const std::vector<int64_t>& hashes = held[tier];
      for (size_t i = 0; i < hashes.size(); ++i) {
        if (i + HoldingLog::kFar < hashes.size()) {
          back.Prefetch(MixHash(hashes[i + HoldingLog::kFar]));
        }
        if (i + HoldingLog::kNear < hashes.size()) {
          back.PrefetchBase(MixHash(hashes[i + HoldingLog::kNear]));
        }
        if (RevokePlacement(back, hashes[i], key)) --state.live[tier];
      }
      std::vector<int64_t>().swap(held[tier]);  // before the next tier's
      continue;
    }
    state.holdings[tier].ForEachAhead(
        [&](int64_t hash) {
          if (RevokePlacement(back, hash, key)) --state.live[tier];
        },
        [&](int64_t hash) { back.Prefetch(MixHash(hash)); },
        [&](int64_t hash) { back.PrefetchBase(MixHash(hash)); });
  }
}

void RobinShardedSnapshotBackend::StoreInDelta(SnapshotCopy::Map& delta,
                                               SnapshotCopy::Map::iterator it,
                                               BlockKey block_key,
                                               BlockRecord record) {
  if (it != delta.end()) {
    it.value() = record;
    return;
  }
  // A new delta entry for a block of the base. Its array is either one this
  // step allocated (private) or still the base's, which the delta must not
  // share: base arrays are freed only by the merge that replaces them.
  if (record.spilled() && !IsPrivate(record.spill())) {
    const Placement* shared = record.spill();
    const uint32_t n = SpillArena::Count(shared);
    Placement* copy = arena_.Allocate(n);
    std::memcpy(copy, shared, n * sizeof(Placement));
    record.set_spill(copy);
  }
  try {
    delta.insert({block_key, record});
  } catch (const std::bad_alloc&) {
    if (record.spilled()) arena_.Free(record.spill());
    throw;
  }
}

bool RobinShardedSnapshotBackend::ReportPlacement(SnapshotCopy& back,
                                                  int64_t hash, uint32_t key,
                                                  uint32_t mask, uint32_t size,
                                                  HoldingLog* log) {
  const uint64_t mixed = MixHash(hash);
  SnapshotCopy::Map& delta = back.delta_for(mixed);
  const BlockKey block_key = BlockKey::From(hash);
  const Placement added{KeyWorker(key), KeyTier(key), mask};
  // Whatever throws below leaves the copy as it was for this hash, or leaves
  // a change that RollBack undoes (it restores every hash in touched_ from
  // the live copy).
  const BaseTable& base = back.base_for(mixed);
  auto it = back.FindInDelta(block_key, mixed);
  const BlockRecord* in_base = nullptr;
  if (it == delta.end()) in_base = base.Find(block_key, mixed);
  if (it != delta.end() ? it->second.tombstone() : in_base == nullptr) {
    touched_.push_back(hash);
    base.MarkChanged(mixed);
    BlockRecord fresh;
    fresh.set_single(added);
    fresh.token_count = size;
    if (it != delta.end()) {
      it.value() = fresh;
    } else {
      delta.insert({block_key, fresh});
    }
    ++back.blocks;
    ++back.placements;
    if (log != nullptr) log->Append(hash);
    return true;
  }
  const BlockRecord& current = it != delta.end() ? it->second : *in_base;
  const uint32_t n = CountOf(current);
  Placement single;
  const Placement* p = PlacementsOf(current, &single);
  const uint32_t pos = LowerBound(p, n, key);
  const bool exists = pos < n && PlacementKey(p[pos]) == key;
  const uint32_t token_count = size > 0 ? size : current.token_count;
  if (exists && p[pos].mask == mask && token_count == current.token_count) {
    return false;  // nothing changes
  }
  touched_.push_back(hash);
  base.MarkChanged(mixed);
  // The new state is built in `record` and stored at the end; allocations
  // come first, so a failure leaves the delta entry as it was.
  BlockRecord record = current;
  if (exists) {
    if (p[pos].mask != mask) {
      if (n == 1) {
        record.word1 = mask;
      } else {
        Placement* array = record.spill();
        if (!IsPrivate(array)) {
          Placement* copy = arena_.Allocate(n);
          std::memcpy(copy, array, n * sizeof(Placement));
          array = copy;
          record.set_spill(copy);
        }
        array[pos].mask = mask;
      }
    }
    record.token_count = token_count;
    StoreInDelta(delta, it, block_key, record);
    return false;
  }
  if (log != nullptr) log->Append(hash);
  if (n == 1) {
    Placement* array = arena_.Allocate(2);
    array[pos] = added;
    array[1 - pos] = single;
    record.set_spill(array);
  } else {
    Placement* old = record.spill();
    if (IsPrivate(old) && SpillArena::Capacity(old) > n) {
      std::memmove(old + pos + 1, old + pos, (n - pos) * sizeof(*old));
      old[pos] = added;
      SpillArena::SetCount(old, n + 1);
    } else {
      Placement* array = arena_.Allocate(n + 1);
      std::memcpy(array, old, pos * sizeof(*old));
      array[pos] = added;
      std::memcpy(array + pos + 1, old + pos, (n - pos) * sizeof(*old));
      if (IsPrivate(old)) arena_.Free(old);
      record.set_spill(array);
    }
  }
  record.token_count = token_count;
  StoreInDelta(delta, it, block_key, record);
  ++back.placements;
  return true;
}

bool RobinShardedSnapshotBackend::RevokePlacement(SnapshotCopy& back,
                                                  int64_t hash, uint32_t key) {
  const uint64_t mixed = MixHash(hash);
  SnapshotCopy::Map& delta = back.delta_for(mixed);
  const BlockKey block_key = BlockKey::From(hash);
  const BaseTable& base = back.base_for(mixed);
  auto it = back.FindInDelta(block_key, mixed);
  const BlockRecord* in_base = nullptr;
  if (it == delta.end()) {
    in_base = base.Find(block_key, mixed);
    if (in_base == nullptr) return false;
  } else if (it->second.tombstone()) {
    return false;
  }
  const BlockRecord& current = it != delta.end() ? it->second : *in_base;
  const uint32_t n = CountOf(current);
  Placement single;
  const Placement* p = PlacementsOf(current, &single);
  const uint32_t pos = LowerBound(p, n, key);
  if (pos == n || PlacementKey(p[pos]) != key) return false;
  touched_.push_back(hash);
  base.MarkChanged(mixed);
  if (n == 1) {
    // The block goes. A tombstone hides the base's record, if it has one.
    if (it == delta.end()) {
      delta.insert({block_key, BlockRecord::Tombstone()});
    } else if (base.Find(block_key, mixed) != nullptr) {
      it.value() = BlockRecord::Tombstone();
    } else {
      delta.erase(it);
    }
    --back.blocks;
    --back.placements;
    // The block's hit counter goes with it.
    SnapshotCopy::CounterMap& counters = back.counters_for(mixed);
    if (auto c = counters.find(hash, mixed); c != counters.end()) {
      counters.erase(c);
      --back.hit_counters;
    }
    return true;
  }
  BlockRecord record = current;  // stored at the end, as in ReportPlacement
  Placement* old = record.spill();
  if (n == 2) {
    const Placement kept = old[1 - pos];
    if (IsPrivate(old)) arena_.Free(old);
    record.set_single(kept);
  } else if (IsPrivate(old)) {
    std::memmove(old + pos, old + pos + 1, (n - pos - 1) * sizeof(*old));
    SpillArena::SetCount(old, n - 1);
  } else {
    Placement* array = arena_.Allocate(n - 1);
    std::memcpy(array, old, pos * sizeof(*old));
    std::memcpy(array + pos, old + pos + 1, (n - pos - 1) * sizeof(*old));
    record.set_spill(array);
  }
  StoreInDelta(delta, it, block_key, record);
  --back.placements;
  return true;
}

uint64_t RobinShardedSnapshotBackend::ScanThreshold() const {
  if (scan_divisor_ == 0) return UINT64_MAX;
  return std::max(scan_min_, Current().placements / scan_divisor_);
}

RobinShardedSnapshotBackend::HeldByTier
RobinShardedSnapshotBackend::ScanForKeys(
    const SnapshotCopy& copy, uint32_t ordinal, uint32_t tiers,
    const std::array<uint64_t, kMaxTier + 1>& expected) {
  ++scans_;
  HeldByTier held;
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    if ((tiers >> tier & 1u) != 0) held[tier].reserve(expected[tier]);
  }
  // A block's placements are sorted by key, worker first: the worker's are
  // adjacent, from the first key at or past its lowest tier.
  const uint32_t first = PlacementKey(ordinal, 0);
  const auto collect = [&](int64_t hash, const BlockRecord& record) {
    if (record.tombstone()) return;
    const uint32_t n = CountOf(record);
    Placement single;
    const Placement* p = PlacementsOf(record, &single);
    for (uint32_t i = LowerBound(p, n, first); i < n && p[i].worker == ordinal;
         ++i) {
      if ((tiers >> p[i].tier & 1u) != 0) held[p[i].tier].push_back(hash);
    }
  };
  for (uint32_t shard = 0; shard < SnapshotCopy::kShards; ++shard) {
    for (const auto& [block, record] : copy.delta(shard)) {
      collect(block.hash(), record);
    }
    copy.base(shard).ForEach([&](const BaseTable::Entry& entry) {
      collect(entry.key.hash(), entry.record);
    });
  }
  return held;
}

uint64_t RobinShardedSnapshotBackend::HoldingsBytes(const WorkerState& state) {
  uint64_t total = 0;
  for (const HoldingLog& log : state.holdings) total += log.bytes();
  return total;
}

void RobinShardedSnapshotBackend::CompactHoldings(uint32_t ordinal,
                                                  WorkerState& state) noexcept {
  const SnapshotCopy& front = Current();
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    HoldingLog& log = state.holdings[tier];
    const uint64_t before = log.bytes();
    if (state.live[tier] == 0) {
      log.Clear();
      state.scanned[tier] = false;
    } else if (state.scanned[tier]) {
      // Stays scanned until it holds nothing.
    } else if (state.live[tier] >= ScanThreshold()) {
      log.Clear();
      state.scanned[tier] = true;
    } else if (log.size() > 2 * state.live[tier] + 4096) {
      const uint32_t key = PlacementKey(ordinal, tier);
      try {
        log.Compact(
            [&](int64_t hash) {
              const BlockRecord* record = front.Find(hash, MixHash(hash));
              if (record == nullptr) return false;
              const uint32_t n = CountOf(*record);
              Placement single;
              const Placement* p = PlacementsOf(*record, &single);
              const uint32_t pos = LowerBound(p, n, key);
              return pos < n && PlacementKey(p[pos]) == key;
            },
            [&](int64_t hash) { front.Prefetch(MixHash(hash)); },
            [&](int64_t hash) { front.PrefetchBase(MixHash(hash)); });
      } catch (const std::bad_alloc&) {
        // Compaction is an optimisation; the log stays valid as it is.
      }
    }
    holdings_bytes_ = holdings_bytes_ + log.bytes() - before;
  }
}

}  // namespace kvindexer::robin
