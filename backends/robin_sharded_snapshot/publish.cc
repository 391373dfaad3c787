// RobinShardedSnapshotBackend's writer, after pass one (DESIGN.md, "Publish
// and catch-up", "Failure handling"): making the non-live copy live,
// bringing the other copy up to date, completing a catch-up an allocation
// failure left pending, and rolling pass one back.
#include "robin_backend.h"

#include <array>
#include <functional>
#include <new>

#include "writer_prefetch.h"

namespace kvindexer::robin {

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
  if (bulk_) {
    // The filled copy stays unpublished; the live one, pristine, references
    // no record or array this step replaced, so they go now.
    retired_records_.clear();
    touched_.clear();
    counted_.clear();
    worker_changes_.clear();
    RunHook(WriterPhase::kDone);
    return;
  }
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

void RobinShardedSnapshotBackend::SyncBackCopy() {
  // Both copies share their base tables here (a merge installs a new one in
  // both before it returns), so making the deltas equal makes the copies
  // equal.
  const SnapshotCopy& front = copies_[gate_.live()];
  SnapshotCopy& back = copies_[1 - gate_.live()];
  // The worker table: the entries this step changed (and the length, which
  // only a new ordinal changes). The records are shared.
  if (back.workers.records.size() < front.workers.records.size()) {
    back.workers.records.resize(front.workers.records.size());
  }
  for (const uint32_t ordinal : worker_changes_) {
    back.workers.records[ordinal] = front.workers.records[ordinal];
  }
  back.workers.present = front.workers.present;
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
  back.version = front.version;
  back.blocks = front.blocks;
  back.placements = front.placements;
  back.hit_counters = front.hit_counters;
  retired_records_.clear();
  touched_.clear();
  counted_.clear();
  worker_changes_.clear();
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

}  // namespace kvindexer::robin
