#include "core/placement_bound.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace kvindexer {
namespace {

// The counts the plan has left a worker so far: the tally's, less the tiers
// already planned.
class PlanState {
 public:
  explicit PlanState(const PlacementTally& tally)
      : tally_(tally), total_(tally.total()) {}

  TierCounts Get(const std::string& id) const {
    const auto it = changed_.find(id);
    return it != changed_.end() ? it->second : tally_.Get(id);
  }
  uint64_t total() const { return total_; }

  // Clears tiers of `id`, least valuable first, until it holds at most
  // `target`.
  void EvictDown(const std::string& id, uint64_t target, EvictionReason reason,
                 std::vector<PlannedEviction>* plan) {
    TierCounts counts = Get(id);
    for (uint32_t tier = kMaxTier; tier >= kTierHbm; --tier) {
      if (TotalOf(counts) <= target) break;
      if (counts[tier] == 0) continue;
      plan->push_back(PlannedEviction{id, tier, counts[tier], reason});
      total_ -= counts[tier];
      counts[tier] = 0;
    }
    changed_[id] = counts;
  }

 private:
  const PlacementTally& tally_;
  absl::flat_hash_map<std::string, TierCounts> changed_;
  uint64_t total_;
};

}  // namespace

std::vector<PlannedEviction> PlanEvictions(
    const PlacementTally& tally, const std::vector<std::string>& changed,
    const PlacementBound& bound) {
  std::vector<PlannedEviction> plan;
  PlanState state(tally);
  if (bound.max_per_worker != 0) {
    for (const std::string& id : changed) {
      if (TotalOf(state.Get(id)) > bound.max_per_worker) {
        state.EvictDown(id, bound.max_per_worker, EvictionReason::kWorkerBound,
                        &plan);
      }
    }
  }
  if (bound.max_placements == 0 || state.total() <= bound.max_placements) {
    return plan;
  }
  // The share: the bound over the workers that still hold placements.
  struct Holder {
    uint64_t total;
    const std::string* id;
  };
  std::vector<Holder> holders;
  holders.reserve(tally.holders());
  for (const auto& [id, counts] : tally.counts()) {
    const uint64_t total = TotalOf(state.Get(id));
    if (total > 0) holders.push_back(Holder{total, &id});
  }
  const uint64_t share =
      bound.max_placements / std::max<uint64_t>(1, holders.size());
  std::erase_if(holders, [share](const Holder& h) { return h.total <= share; });
  std::sort(holders.begin(), holders.end(),
            [](const Holder& a, const Holder& b) {
              return a.total != b.total ? a.total > b.total : *a.id < *b.id;
            });
  for (const Holder& holder : holders) {
    if (state.total() <= bound.max_placements) break;
    const uint64_t excess = state.total() - bound.max_placements;
    const uint64_t target =
        std::max(share, holder.total > excess ? holder.total - excess : 0);
    state.EvictDown(*holder.id, target, EvictionReason::kIndexBound, &plan);
  }
  return plan;
}

}  // namespace kvindexer
