// RobinShardedSnapshotBackend's merges (DESIGN.md, "Merges"): the policy
// that says when a shard's delta is folded into a new base table and how much
// one apply may merge, and the merge itself, installed in both copies.
#include "robin_backend.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace kvindexer::robin {

void RobinShardedSnapshotBackend::SetMergePolicy(size_t min_delta,
                                                 size_t base_ratio,
                                                 size_t budget) {
  merge_min_delta_ = min_delta;
  merge_base_ratio_ = base_ratio;
  merge_budget_ = budget;
  bulk_merge_base_ratio_ = std::max<size_t>(1, base_ratio / kBulkRatioDivisor);
}

size_t RobinShardedSnapshotBackend::MergeLimitAt(const BaseTable& base,
                                                 size_t ratio) const {
  return std::max<size_t>(merge_min_delta_, base.size() / ratio);
}

bool RobinShardedSnapshotBackend::MergeDeltas(size_t ratio,
                                              size_t budget) noexcept {
  SnapshotCopy& front = copies_[gate_.live()];
  SnapshotCopy& back = copies_[1 - gate_.live()];
  // The copy the merges read: the live one, equal to the other here, or the
  // one a bulk load fills (the live one is then pristine and stays so).
  const SnapshotCopy& source = Current();
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
      const size_t limit = MergeLimitAt(source.base(shard), ratio);
      const size_t size = source.delta(shard).size();
      if (size > limit) {
        due.emplace_back(double(size) / double(std::max<size_t>(limit, 1)),
                         shard);
      }
    }
    std::sort(due.begin(), due.end(), std::greater<>());
    std::vector<BaseTable::Change> changes;
    size_t written = 0;
    for (const auto& [excess, shard] : due) {
      const SnapshotCopy::Map& delta = source.delta(shard);
      const BaseTable& base = source.base(shard);
      if (written != 0 && written + base.size() + delta.size() > budget) {
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
    return false;  // merging is an optimisation; the layers stay as they are
  }
  if (shards.empty()) return true;
  if (bulk_) {
    // The delta's arrays were the filled copy's alone, edited in place; in
    // a base they are shared, as a merge in service finds them.
    for (const uint32_t shard : shards) {
      for (const auto& [key, record] : back.delta(shard)) {
        if (!record.tombstone() && record.spilled()) {
          SpillArena::ClearPrivate(record.spill());
        }
      }
    }
  }
  // Readers of either copy see the same blocks before and after: the new
  // base holds exactly what the old base and the delta held together.
  for (size_t k = 0; k < shards.size(); ++k) {
    back.InstallBase(shards[k], built[k].get(), MergeLimitAt(*built[k], ratio));
  }
  if (!bulk_) {
    gate_.PublishAndDrain({});
    for (size_t k = 0; k < shards.size(); ++k) {
      front.InstallBase(shards[k], built[k].get(),
                        MergeLimitAt(*built[k], ratio));
    }
  }
  // No reader can reach the old tables or the arrays of replaced entries.
  for (Placement* array : released) arena_.Free(array);
  for (size_t k = 0; k < shards.size(); ++k) {
    bases_[shards[k]] = std::move(built[k]);
  }
  ++merges_;
  return true;
}

}  // namespace kvindexer::robin
