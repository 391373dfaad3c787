// The placement bound (docs/contract.md, "Limits > The placement bound"):
// how many (worker, tier, block) placements the index may hold in all and
// per worker, and the deterministic plan of evictions that brings it back
// under them after a mutation.
//
// Eviction works on whole tiers of one worker: the planner names (worker,
// tier) pairs whose placements all go, the least valuable tier first (SSD,
// then host DRAM, then GPU HBM). A plan depends only on the placement
// counts it is given, which every conforming backend reports alike after the
// same mutations, so every replica, every replay and every backend evicts
// the same placements. Evicting never adds a placement: the index can only
// under-report the worker afterwards.
//
// Thread safety: the functions are pure.
#ifndef KVINDEXER_CORE_PLACEMENT_BOUND_H_
#define KVINDEXER_CORE_PLACEMENT_BOUND_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/eviction_reason.h"
#include "core/placement_tally.h"

namespace kvindexer {

inline constexpr std::string_view kMaxPlacementsVar =
    "KV_INDEXER_MAX_PLACEMENTS";
inline constexpr std::string_view kMaxPlacementsPerWorkerVar =
    "KV_INDEXER_MAX_PLACEMENTS_PER_WORKER";

// The bound counts placements with IndexBackend::CountPlacements, which
// backends offer from this ABI minor on.
inline constexpr uint32_t kPlacementBoundAbiMinor = 2;

// 0 means unbounded, for each field. With max_placements set, a mutation
// that leaves the index over it evicts from the workers holding more than
// their fair share, max_placements / (workers holding placements), largest
// first, each until it is at or below that share (a whole tier may take it
// further): a worker within its share is never evicted for another
// worker's growth. With max_per_worker set, a worker over it is
// evicted down to it.
//
// With index_bound_from_log (fleet replicas), the Indexer applies only the
// per-worker bound by itself: the index-wide evictions come as records of
// the fleet event log (Indexer::PlanIndexEvictions proposes them,
// Indexer::ApplyLoggedEvictions applies them), so that every replica
// evicts the same tiers at the same log position.
struct PlacementBound {
  uint64_t max_placements = 0;
  uint64_t max_per_worker = 0;
  bool index_bound_from_log = false;

  bool enabled() const { return max_placements != 0 || max_per_worker != 0; }
};

// One (worker, tier) to clear, with the placements it held.
struct PlannedEviction {
  std::string worker_id;
  uint32_t tier = 0;
  uint64_t placements = 0;
  EvictionReason reason = EvictionReason::kIndexBound;

  bool operator==(const PlannedEviction&) const = default;
};

// Index-wide evictions proposed for the fleet event log
// (OperatorView::PlanIndexEvictions), with the fair share they were
// planned against: where the record is applied, a stream at or below the
// share loses nothing.
struct IndexEvictionPlan {
  std::vector<PlannedEviction> evictions;
  uint64_t share = 0;
};

// The evictions that bring `tally` within `bound`, in the order they are to
// be applied: first each of `changed` (in the order given; the workers the
// mutation changed) that is over max_per_worker, down to it; then, while
// the index is over max_placements, the workers over their fair share (the
// share computed once, from the holders after the first step), the largest
// first and equal ones by id, each down to the larger of its share and what
// brings the index to the bound. Within a worker, tiers go SSD, DRAM, HBM,
// each whole. Empty when nothing is over.
std::vector<PlannedEviction> PlanEvictions(
    const PlacementTally& tally, const std::vector<std::string>& changed,
    const PlacementBound& bound);

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_PLACEMENT_BOUND_H_
