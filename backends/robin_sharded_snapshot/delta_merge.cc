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

}  // namespace kvindexer::robin
