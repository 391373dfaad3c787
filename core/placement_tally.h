// PlacementTally: every worker's placement count per tier, and their sum,
// as the placement bound plans from them (core/placement_bound.h).
//
// Thread safety: none; the Indexer's mutation mutex guards its tally.
#ifndef KVINDEXER_CORE_PLACEMENT_TALLY_H_
#define KVINDEXER_CORE_PLACEMENT_TALLY_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "kvindexer/backend.h"

namespace kvindexer {

// Placements per tier ([0] unused, as in IndexBackend::CountPlacements).
using TierCounts = std::array<uint64_t, kMaxTier + 1>;

uint64_t TotalOf(const TierCounts& counts);

// The placement counts of every worker that holds any, and their sum.
class PlacementTally {
 public:
  // Sets `worker_id`'s counts; all zero removes it.
  void Set(std::string_view worker_id, const TierCounts& counts);
  void Erase(std::string_view worker_id);
  void Clear();
  // Zeros when `worker_id` holds nothing.
  TierCounts Get(std::string_view worker_id) const;
  uint64_t total() const { return total_; }
  // Workers holding at least one placement.
  size_t holders() const { return counts_.size(); }
  const absl::flat_hash_map<std::string, TierCounts>& counts() const {
    return counts_;
  }

 private:
  absl::flat_hash_map<std::string, TierCounts> counts_;
  uint64_t total_ = 0;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_PLACEMENT_TALLY_H_
