#include "robin_backend.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>

#include "kvindexer/backend_kit.h"

namespace kvindexer::robin {
namespace {

using kit::ErrorStatus;
using kit::OkStatus;

// How far ahead of its use a writer loop prefetches a bucket and the base
// directory word (kPrefetchDistance), and then the base entries the
// directory points to (kBasePrefetchDistance).
constexpr size_t kPrefetchDistance = 16;
constexpr size_t kBasePrefetchDistance = 8;

// Prefetches for the writer's lookup of hashes[i].
[[gnu::always_inline]] inline void PrefetchAhead(const SnapshotCopy& copy,
                                                 const int64_t* hashes,
                                                 size_t i, size_t n) {
  if (i + kPrefetchDistance < n) {
    copy.Prefetch(MixHash(hashes[i + kPrefetchDistance]));
  }
  if (i + kBasePrefetchDistance < n) {
    copy.PrefetchBase(MixHash(hashes[i + kBasePrefetchDistance]));
  }
}

uint32_t CountOf(const BlockRecord& record) {
  return record.spilled() ? SpillArena::Count(record.spill()) : 1;
}

// The placements of `record`; a single inline one is unpacked into `*single`.
const Placement* PlacementsOf(const BlockRecord& record, Placement* single) {
  if (record.spilled()) return record.spill();
  *single = record.single();
  return single;
}

// Position of `key` in p[0..n), sorted by PlacementKey.
uint32_t LowerBound(const Placement* p, uint32_t n, uint32_t key) {
  uint32_t i = 0;
  while (i < n && PlacementKey(p[i]) < key) ++i;
  return i;
}

bool SameSpec(const WorkerRecord& record, const ApplyBatchView& batch) {
  if ((record.has_cache_spec != 0) != (batch.has_cache_spec != 0)) {
    return false;
  }
  if (batch.has_cache_spec == 0) return true;
  const CacheSpec& a = record.cache_spec;
  const CacheSpec& b = batch.cache_spec;
  return a.version == b.version && a.components == b.components &&
         a.swa_window_tokens == b.swa_window_tokens &&
         a.full_tier_mask == b.full_tier_mask &&
         a.swa_tier_mask == b.swa_tier_mask &&
         a.mamba_tier_mask == b.mamba_tier_mask;
}

uint64_t StringHeapBytes(const std::string& s) {
  // Short strings live inside the object.
  return s.capacity() > 15 ? s.capacity() + 1 : 0;
}

uint64_t RecordBytes(const WorkerRecord& record) {
  return sizeof(WorkerRecord) + StringHeapBytes(record.id) +
         StringHeapBytes(record.address);
}

uint64_t TableBytes(const WorkerTable& table) {
  return sizeof(WorkerTable) +
         table.records.capacity() * sizeof(table.records[0]);
}

// The set of workers already announced to the visitor in one call.
class SeenWorkers {
 public:
  explicit SeenWorkers(size_t workers) {
    const size_t words = (workers + 63) / 64;
    if (words > inline_.size()) {
      heap_.assign(words, 0);
      bits_ = heap_.data();
    } else {
      inline_.fill(0);
      bits_ = inline_.data();
    }
  }
  // True the first time `worker` is inserted.
  bool Insert(uint32_t worker) {
    uint64_t& word = bits_[worker / 64];
    const uint64_t bit = uint64_t{1} << (worker % 64);
    if ((word & bit) != 0) return false;
    word |= bit;
    return true;
  }

 private:
  std::array<uint64_t, 8> inline_;
  std::vector<uint64_t> heap_;
  uint64_t* bits_;
};

WorkerView ViewOf(uint32_t ordinal, const WorkerRecord& record) {
  WorkerView view;
  view.worker = ordinal;
  view.id = StringView{record.id.data(), record.id.size()};
  view.address = StringView{record.address.data(), record.address.size()};
  view.has_cache_spec = record.has_cache_spec;
  view.cache_spec = record.cache_spec;
  return view;
}

struct IgnorePresent {
  void operator()(int64_t, uint64_t) const {}
};

// Visits `hashes` in `snapshot`: OnWorker before a worker's first placement,
// OnBlock for every hash in order (absent ones with no placements), and
// `on_present(hash, mixed)` for every present block. After the visitor asks
// to stop, only `on_present` runs. Throws std::bad_alloc.
template <typename OnPresent>
void VisitBlocks(const SnapshotCopy& snapshot, HashSpan hashes,
                 BlockVisitor* visitor, OnPresent&& on_present) {
  constexpr bool kVisitOnly =
      std::is_same_v<std::decay_t<OnPresent>, IgnorePresent>;
  // Lookups run a small window ahead of the callbacks so that their cache
  // misses overlap; spill arrays are prefetched in the same pass.
  constexpr size_t kWindow = 8;
  const WorkerTable& workers = *snapshot.workers;
  const size_t total_workers = workers.records.size();
  SeenWorkers seen(total_workers);
  size_t seen_count = 0;
  bool visiting = true;
  const BlockRecord* records[kWindow];
  uint64_t mixed_window[kWindow];
  for (size_t base = 0; base < hashes.size; base += kWindow) {
    const size_t m = std::min(kWindow, hashes.size - base);
    for (size_t k = 0; k < m; ++k) {
      mixed_window[k] = MixHash(hashes.data[base + k]);
      snapshot.Prefetch(mixed_window[k]);
    }
    for (size_t k = 0; k < m; ++k) snapshot.PrefetchBase(mixed_window[k]);
    for (size_t k = 0; k < m; ++k) {
      const int64_t hash = hashes.data[base + k];
      const uint64_t mixed = mixed_window[k];
      const BlockRecord* record = snapshot.Find(hash, mixed);
      records[k] = record;
      if (record != nullptr) {
        if (record->spilled()) __builtin_prefetch(record->spill());
        on_present(hash, mixed);
      }
    }
    if (!visiting) continue;
    for (size_t k = 0; k < m; ++k) {
      const BlockRecord* record = records[k];
      BlockView view{base + k, 0, nullptr, 0};
      Placement single;
      if (record != nullptr) {
        const uint32_t n = CountOf(*record);
        const Placement* placements = PlacementsOf(*record, &single);
        // Once every worker has been announced there is nothing to check.
        if (seen_count < total_workers) {
          for (uint32_t j = 0; j < n; ++j) {
            const uint32_t worker = placements[j].worker;
            if (seen.Insert(worker)) {
              ++seen_count;
              visitor->OnWorker(ViewOf(worker, *workers.records[worker]));
            }
          }
        }
        view = BlockView{base + k, record->token_count, placements, n};
      }
      if (!visitor->OnBlock(view)) {
        if constexpr (kVisitOnly) return;
        visiting = false;  // a counting match still counts the rest
        break;
      }
    }
  }
}

}  // namespace

RobinShardedSnapshotBackend::RobinShardedSnapshotBackend() {
  published_table_ = std::make_unique<WorkerTable>();
  copies_[0].workers = published_table_.get();
  copies_[1].workers = published_table_.get();
  worker_bytes_ = TableBytes(*published_table_);
  UpdateMemory();
}

RobinShardedSnapshotBackend::~RobinShardedSnapshotBackend() = default;

// ---------------------------------------------------------------------------
// Writer.

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
  const uint32_t live = gate_.live();
  SnapshotCopy& back = copies_[1 - live];
  const SnapshotCopy& front = copies_[live];

  // Step 1: the worker. A new worker or a changed address or spec prepares a
  // new published table; nothing reader-visible changes yet.
  const std::string_view id(batch.worker_id.data, batch.worker_id.size);
  const std::string_view address(batch.worker_address.data,
                                 batch.worker_address.size);
  uint32_t ordinal;
  bool new_worker = false;
  if (auto it = registry_.find(id); it != registry_.end()) {
    ordinal = it->second;
  } else {
    if (worker_states_.size() > kMaxWorkerOrdinal) {
      return ErrorStatus(BackendCode::kResourceExhausted,
                         "too many workers (the limit is %u)",
                         kMaxWorkerOrdinal + 1);
    }
    ordinal = static_cast<uint32_t>(worker_states_.size());
    new_worker = true;
  }
  std::unique_ptr<WorkerRecord> new_record;
  std::unique_ptr<WorkerTable> new_table;
  if (new_worker || records_[ordinal]->address != address ||
      !SameSpec(*records_[ordinal], batch)) {
    new_record = std::make_unique<WorkerRecord>();
    new_record->id.assign(id);
    new_record->address.assign(address);
    new_record->has_cache_spec = batch.has_cache_spec != 0 ? 1 : 0;
    if (batch.has_cache_spec != 0) new_record->cache_spec = batch.cache_spec;
    new_table = std::make_unique<WorkerTable>();
    new_table->records.reserve(front.workers->records.size() +
                               (new_worker ? 1 : 0));
    new_table->records = front.workers->records;
    if (new_worker) {
      new_table->records.push_back(new_record.get());
    } else {
      new_table->records[ordinal] = new_record.get();
    }
  }
  if (new_worker) {
    // Reserve everything the commit below needs so that it cannot fail.
    worker_states_.reserve(worker_states_.size() + 1);
    records_.reserve(records_.size() + 1);
    worker_states_.push_back(std::make_unique<WorkerState>());
    try {
      registry_.insert({std::string(id), ordinal});
    } catch (const std::bad_alloc&) {
      worker_states_.pop_back();
      throw;
    }
  }
  retired_records_.reserve(1);
  retired_tables_.reserve(1);
  WorkerState& state = *worker_states_[ordinal];
  const uint64_t holdings_before = [&] {
    uint64_t total = 0;
    for (const HoldingLog& log : state.holdings) total += log.bytes();
    return total;
  }();

  // Step 2: pass one on the non-live copy.
  const std::array<uint64_t, kMaxTier + 1> saved_live = state.live;
  touched_.clear();
  counted_.clear();
  try {
    RunActions(batch, ordinal, state, back);
  } catch (const std::bad_alloc&) {
    try {
      RollBack(state, saved_live);
    } catch (const std::bad_alloc&) {
      poisoned_ = true;
    }
    if (new_worker) {
      registry_.erase(id);
      worker_states_.pop_back();  // frees its logs too
    } else {
      // The logs may have grown (an entry logged before the failure stays:
      // the log is lazy, a stale entry revokes nothing).
      uint64_t holdings_after = 0;
      for (const HoldingLog& log : state.holdings) {
        holdings_after += log.bytes();
      }
      holdings_bytes_ = holdings_bytes_ + holdings_after - holdings_before;
    }
    UpdateMemory();
    return ErrorStatus(BackendCode::kResourceExhausted,
                       "out of memory applying the batch; nothing changed");
  }
  uint64_t holdings_after = 0;
  for (const HoldingLog& log : state.holdings) holdings_after += log.bytes();
  holdings_bytes_ = holdings_bytes_ + holdings_after - holdings_before;

  if (touched_.empty() && new_table == nullptr) {
    // Nothing reader-visible changed: no need to publish.
    CompactHoldings(ordinal, state);
    UpdateMemory();
    return OkStatus();
  }

  // Step 3: publish. Commit the worker first (cannot fail: reserved above).
  if (new_table != nullptr) {
    worker_bytes_ += RecordBytes(*new_record) + TableBytes(*new_table);
    if (new_worker) {
      records_.push_back(std::move(new_record));
    } else {
      worker_bytes_ -= RecordBytes(*records_[ordinal]);
      retired_records_.push_back(std::move(records_[ordinal]));
      records_[ordinal] = std::move(new_record);
    }
    worker_bytes_ -= TableBytes(*published_table_);
    retired_tables_.push_back(std::move(published_table_));
    published_table_ = std::move(new_table);
    back.workers = published_table_.get();
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

bool RobinShardedSnapshotBackend::FinishPendingSync() noexcept {
  if (!pending_sync_) return true;
  try {
    SyncBackCopy();
  } catch (const std::bad_alloc&) {
    return false;
  }
  FinishSync();
  return true;
}

void RobinShardedSnapshotBackend::Publish() noexcept {
  const SnapshotCopy& front = copies_[gate_.live()];
  SnapshotCopy& back = copies_[1 - gate_.live()];
  back.version = front.version + 1;
  RunHook(WriterPhase::kBackCopyApplied);
  gate_.PublishAndDrain(hook_ ? std::function<void()>([this] {
    RunHook(WriterPhase::kPublished);
  })
                              : std::function<void()>());
  // Bring the old copy up to date; no reader can see it any more.
  try {
    SyncBackCopy();
    FinishSync();
  } catch (const std::bad_alloc&) {
    pending_sync_ = true;  // the next writer finishes it first
  }
  RunHook(WriterPhase::kDone);
}

void RobinShardedSnapshotBackend::RunActions(const ApplyBatchView& batch,
                                             uint32_t ordinal,
                                             WorkerState& state,
                                             SnapshotCopy& back) {
  for (size_t a = 0; a < batch.action_count; ++a) {
    const ActionView& action = batch.actions[a];
    const uint32_t tier = action.tier;
    const uint32_t key = PlacementKey(ordinal, tier);
    HoldingLog& log = state.holdings[tier];
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
      case kActionClearAllAtTier:
        if (state.live[tier] == 0) break;
        log.ForEachAhead(
            [&](int64_t hash) {
              if (RevokePlacement(back, hash, key)) --state.live[tier];
            },
            [&](int64_t hash) { back.Prefetch(MixHash(hash)); },
            [&](int64_t hash) { back.PrefetchBase(MixHash(hash)); });
        break;
    }
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
                                                  HoldingLog& log) {
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
    log.Append(hash);
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
  log.Append(hash);
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

void RobinShardedSnapshotBackend::SyncBackCopy() {
  // Both copies share their base tables here (a merge installs a new one in
  // both before it returns), so making the deltas equal makes the copies
  // equal.
  const SnapshotCopy& front = copies_[gate_.live()];
  SnapshotCopy& back = copies_[1 - gate_.live()];
  const bool counters = front.hit_counters != 0 || back.hit_counters != 0;
  for (size_t i = 0; i < touched_.size(); ++i) {
    if (i + kPrefetchDistance < touched_.size()) {
      const uint64_t ahead = MixHash(touched_[i + kPrefetchDistance]);
      front.Prefetch(ahead);
      back.Prefetch(ahead);
    }
    const int64_t hash = touched_[i];
    const uint64_t mixed = MixHash(hash);
    const BlockKey block_key = BlockKey::From(hash);
    const SnapshotCopy::Map& front_delta = front.delta_for(mixed);
    auto found = front_delta.find(block_key, mixed);
    const BlockRecord* current =
        found == front_delta.end() ? nullptr : &found->second;
    const bool current_spilled =
        current != nullptr && !current->tombstone() && current->spilled();
    SnapshotCopy::Map& map = back.delta_for(mixed);
    // The stale copy's array, when the live copy no longer references it.
    // Delta arrays are never base arrays, so this frees only delta arrays.
    auto release_stale = [&](const BlockRecord& stale) {
      if (!stale.tombstone() && stale.spilled() &&
          (!current_spilled || current->spill() != stale.spill())) {
        arena_.Free(stale.spill());
      }
    };
    if (current != nullptr) {
      auto [it, inserted] = map.insert({block_key, *current});
      if (!inserted) {
        release_stale(it->second);
        it.value() = *current;
      }
    } else if (auto it = map.find(block_key, mixed); it != map.end()) {
      release_stale(it->second);
      map.erase(it);
    }
    // Both copies share the array now: from here on it is copy-on-write.
    if (current_spilled) SpillArena::ClearPrivate(current->spill());
    if (counters) SyncCounter(front, back, hash, mixed);
  }
  for (const int64_t hash : counted_) {
    SyncCounter(front, back, hash, MixHash(hash));
  }
}

void RobinShardedSnapshotBackend::SyncCounter(const SnapshotCopy& front,
                                              SnapshotCopy& back, int64_t hash,
                                              uint64_t mixed) {
  const uint64_t current = front.Counter(hash, mixed);
  SnapshotCopy::CounterMap& counters = back.counters_for(mixed);
  auto it = counters.find(hash, mixed);
  if (it != counters.end()) {
    if (current != 0) {
      it.value() = current;
    } else {
      counters.erase(it);
    }
  } else if (current != 0) {
    counters.insert({hash, current});
  }
}

void RobinShardedSnapshotBackend::FinishSync() noexcept {
  const SnapshotCopy& front = copies_[gate_.live()];
  SnapshotCopy& back = copies_[1 - gate_.live()];
  back.workers = front.workers;
  back.version = front.version;
  back.blocks = front.blocks;
  back.placements = front.placements;
  back.hit_counters = front.hit_counters;
  retired_records_.clear();
  retired_tables_.clear();
  touched_.clear();
  counted_.clear();
  pending_sync_ = false;
}

void RobinShardedSnapshotBackend::RollBack(
    WorkerState& state, const std::array<uint64_t, kMaxTier + 1>& saved_live) {
  const SnapshotCopy& front = copies_[gate_.live()];
  SnapshotCopy& back = copies_[1 - gate_.live()];
  state.live = saved_live;
  // Pass one touched only these hashes, and every array it created is
  // private to the non-live copy; SyncBackCopy restores them from the live
  // copy and frees exactly those arrays.
  SyncBackCopy();
  back.blocks = front.blocks;
  back.placements = front.placements;
  back.hit_counters = front.hit_counters;
  touched_.clear();
  counted_.clear();
}

size_t RobinShardedSnapshotBackend::MergeLimit(const BaseTable& base) const {
  return std::max<size_t>(merge_min_delta_, base.size() / merge_base_ratio_);
}

void RobinShardedSnapshotBackend::MergeLargeDeltas() noexcept {
  SnapshotCopy& front = copies_[gate_.live()];
  SnapshotCopy& back = copies_[1 - gate_.live()];
  std::vector<uint32_t> shards;
  std::vector<std::unique_ptr<BaseTable>> built;
  std::vector<Placement*> released;
  try {
    // The shards whose deltas exceed their limit, those furthest over it
    // first, until the merge budget (kMergeBudget unless SetMergePolicy
    // changed it) has been written: shards fill at
    // the same pace and would otherwise all come due in the same apply,
    // which would then rewrite the whole index. At least one shard is
    // merged, so a backlog always shrinks.
    std::vector<std::pair<double, uint32_t>> due;
    for (uint32_t shard = 0; shard < SnapshotCopy::kShards; ++shard) {
      const size_t limit = MergeLimit(front.base(shard));
      const size_t size = front.delta(shard).size();
      if (size > limit) {
        due.emplace_back(double(size) / double(std::max<size_t>(limit, 1)),
                         shard);
      }
    }
    std::sort(due.begin(), due.end(), std::greater<>());
    std::vector<BaseTable::Change> changes;
    size_t written = 0;
    for (const auto& [excess, shard] : due) {
      const SnapshotCopy::Map& delta = front.delta(shard);
      const BaseTable& base = front.base(shard);
      if (written != 0 &&
          written + base.size() + delta.size() > merge_budget_) {
        break;
      }
      written += base.size() + delta.size();
      changes.clear();
      changes.reserve(delta.size());
      for (const auto& [key, record] : delta) {
        changes.push_back({MixHash(key.hash()), {key, record}});
      }
      shards.reserve(shards.size() + 1);
      built.push_back(
          BaseTable::Merge(base, changes, &released, &mapping_pool_));
      shards.push_back(shard);
    }
  } catch (const std::bad_alloc&) {
    return;  // merging is an optimisation; the layers stay as they are
  }
  if (shards.empty()) return;
  // Readers of either copy see the same blocks before and after: the new
  // base holds exactly what the old base and the delta held together.
  for (size_t k = 0; k < shards.size(); ++k) {
    back.InstallBase(shards[k], built[k].get(), MergeLimit(*built[k]));
  }
  gate_.PublishAndDrain({});
  for (size_t k = 0; k < shards.size(); ++k) {
    front.InstallBase(shards[k], built[k].get(), MergeLimit(*built[k]));
  }
  // No reader can reach the old tables or the arrays of replaced entries.
  for (Placement* array : released) arena_.Free(array);
  for (size_t k = 0; k < shards.size(); ++k) {
    bases_[shards[k]] = std::move(built[k]);
  }
  ++merges_;
}

void RobinShardedSnapshotBackend::CompactHoldings(uint32_t ordinal,
                                                  WorkerState& state) noexcept {
  const SnapshotCopy& front = copies_[gate_.live()];
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    HoldingLog& log = state.holdings[tier];
    const uint64_t before = log.bytes();
    if (state.live[tier] == 0) {
      log.Clear();
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

void RobinShardedSnapshotBackend::UpdateMemory() noexcept {
  uint64_t total = sizeof(*this);
  total += copies_[0].bytes() + copies_[1].bytes();
  for (const std::unique_ptr<BaseTable>& base : bases_) {
    if (base != nullptr) total += sizeof(BaseTable) + base->bytes();
  }
  total += mapping_pool_.cached_bytes();
  total += arena_.bytes();
  total += holdings_bytes_;
  total += worker_bytes_;
  total += worker_states_.capacity() * sizeof(worker_states_[0]) +
           worker_states_.size() * sizeof(WorkerState);
  total += records_.capacity() * sizeof(records_[0]);
  total += registry_.bucket_count() *
           sizeof(tsl::detail_robin_hash::bucket_entry<
                  std::pair<std::string, uint32_t>, false>);
  for (const auto& [id, ordinal] : registry_) total += StringHeapBytes(id);
  total += (touched_.capacity() + counted_.capacity()) * sizeof(int64_t);
  writer_bytes_.store(total, std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------
// Readers.

BackendStatus RobinShardedSnapshotBackend::Match(
    HashSpan hashes, bool count_as_hit, BlockVisitor* visitor) noexcept {
  if (count_as_hit) return CountingMatch(hashes, visitor);
  return PrefixScan(hashes, visitor);
}

BackendStatus RobinShardedSnapshotBackend::PrefixScan(
    HashSpan hashes, BlockVisitor* visitor) noexcept {
  if (BackendStatus check = kit::CheckVisit(hashes, visitor);
      check.code != BackendCode::kOk) {
    return check;
  }
  try {
    ReadSection section(gate_);
    VisitBlocks(copies_[section.live()], hashes, visitor, IgnorePresent());
    return OkStatus();
  } catch (const std::bad_alloc&) {
    return ErrorStatus(BackendCode::kResourceExhausted,
                       "out of memory while reading the index");
  }
}

BackendStatus RobinShardedSnapshotBackend::CountingMatch(
    HashSpan hashes, BlockVisitor* visitor) noexcept {
  if (BackendStatus check = kit::CheckVisit(hashes, visitor);
      check.code != BackendCode::kOk) {
    return check;
  }
  std::lock_guard<std::mutex> lock(writer_mu_);
  if (BackendStatus ready = WriterReady(); ready.code != BackendCode::kOk) {
    return ready;
  }
  // The non-live copy equals the live one here and only this thread touches
  // it: read the blocks from it and raise its counters.
  SnapshotCopy& back = copies_[1 - gate_.live()];
  touched_.clear();
  counted_.clear();
  try {
    VisitBlocks(back, hashes, visitor, [&](int64_t hash, uint64_t mixed) {
      counted_.push_back(hash);
      SnapshotCopy::CounterMap& counters = back.counters_for(mixed);
      auto it = counters.find(hash, mixed);
      if (it == counters.end()) {
        counters.insert({hash, 1});
        ++back.hit_counters;
      } else if (it->second != UINT64_MAX) {
        ++it.value();
      }
    });
  } catch (const std::bad_alloc&) {
    try {
      SyncBackCopy();  // undo the raised counters
      counted_.clear();
    } catch (const std::bad_alloc&) {
      poisoned_ = true;
    }
    back.hit_counters = copies_[gate_.live()].hit_counters;
    return ErrorStatus(BackendCode::kResourceExhausted,
                       "out of memory counting hits; no counter changed");
  }
  if (!counted_.empty()) Publish();
  UpdateMemory();
  return OkStatus();
}

BackendStatus RobinShardedSnapshotBackend::HitCounts(
    HashSpan hashes, uint64_t* counts) noexcept {
  if (BackendStatus check = kit::CheckHitCounts(hashes, counts);
      check.code != BackendCode::kOk) {
    return check;
  }
  ReadSection section(gate_);
  const SnapshotCopy& snapshot = copies_[section.live()];
  for (size_t i = 0; i < hashes.size; ++i) {
    const int64_t hash = hashes.data[i];
    counts[i] = snapshot.Counter(hash, MixHash(hash));
  }
  return OkStatus();
}

void RobinShardedSnapshotBackend::GetStats(BackendStats* stats) noexcept {
  if (stats == nullptr) return;
  ReadSection section(gate_);
  const SnapshotCopy& snapshot = copies_[section.live()];
  kit::SetStat(stats, &BackendStats::blocks, snapshot.blocks);
  kit::SetStat(stats, &BackendStats::placements, snapshot.placements);
  kit::SetStat(stats, &BackendStats::workers, snapshot.workers->records.size());
  kit::SetStat(stats, &BackendStats::hit_counters, snapshot.hit_counters);
  kit::SetStat(stats, &BackendStats::memory_bytes,
               writer_bytes_.load(std::memory_order_relaxed));
}

}  // namespace kvindexer::robin
