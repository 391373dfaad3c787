// FOLD (docs/bridge-events.md, "Recovery > Primitives"): the placement one
// worker holds after a run of batches, starting from nothing, computed
// locally with the server's REPORT / REVOKE / CLEAR_ALL_AT_TIER rules for a
// single worker. The result feeds INSTALL as a hashes_by_tier list.
//
// Thread safety: a FoldedPlacement is not thread-safe; FoldBatches is a pure
// function.
#ifndef KVINDEXER_BRIDGE_RECOVERY_FOLD_H_
#define KVINDEXER_BRIDGE_RECOVERY_FOLD_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "bridge/action_builder.h"
#include "bridge/live_buffer.h"
#include "common/wire_vocabulary.h"
#include "kv_indexer.pb.h"

namespace kvindexer::bridge {

class FoldedPlacement {
 public:
  // Applies one batch's actions in order: REPORT sets (hash, tier) to the
  // hash's mask and, when the size is > 0, its size (a size of 0 keeps the
  // one already held); REVOKE removes (hash, tier); CLEAR_ALL_AT_TIER
  // empties the tier.
  void Apply(const ActionList& actions);

  // One TierHashes per non-empty tier, in tier order (HBM, DRAM, SSD). Within
  // a tier hashes keep the order in which they were first reported since
  // they were last absent, so parents precede children as they did on the
  // worker. Side arrays are empty for a tier whose every entry has mask 0
  // and size 0 (legacy stores); otherwise both have one entry per hash.
  std::vector<kv_indexer::v1::TierHashes> ToTierHashes() const;

  // Number of (hash, tier) placements held.
  size_t size() const;

 private:
  struct Slot {
    uint32_t mask = 0;
    uint32_t size = 0;
    uint64_t order = 0;
  };
  static constexpr size_t kTierCount = 3;
  static size_t TierIndex(Tier tier) { return TierNumber(tier) - 1; }

  std::array<std::unordered_map<int64_t, Slot>, kTierCount> tiers_;
  uint64_t next_order_ = 0;
};

struct FoldResult {
  FoldedPlacement placement;
  // Sequence numbers of batches whose payload could not be decoded; their
  // content is missing from `placement`.
  std::vector<uint64_t> undecodable;
  // Events in the batches that decoded.
  uint64_t events = 0;
};

// Folds `batches` in the order given (callers pass them in sequence order).
// `clear_tiers` expands AllBlocksCleared exactly as for live batches.
FoldResult FoldBatches(std::span<const LiveBatch> batches,
                       std::span<const Tier> clear_tiers);

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_RECOVERY_FOLD_H_
