// Turns a decoded batch into the ordered, merged action list of
// docs/bridge-events.md, "Building actions". The list is flat: every action's
// hashes, component masks and block
// sizes are ranges of three aligned vectors.
#ifndef KVINDEXER_BRIDGE_ACTION_BUILDER_H_
#define KVINDEXER_BRIDGE_ACTION_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "bridge/kv_events.h"

namespace kvindexer::bridge {

struct KvAction {
  ActionType kind = ActionType::kReport;
  Tier tier = Tier::kHbm;
  size_t hash_begin = 0;  // into ActionList::hashes / masks / sizes
  size_t hash_count = 0;  // 0 for kClearAllAtTier
  // REPORT only: true when some hash came from a component store, so the
  // wire action carries component_masks and block_sizes (0 for legacy
  // hashes). Otherwise both side arrays are sent empty.
  bool has_side_arrays = false;
};

// Invariant: hashes, masks and sizes always have the same length; masks and
// sizes are 0 wherever no component information exists.
struct ActionList {
  std::vector<KvAction> actions;
  std::vector<int64_t> hashes;
  std::vector<uint32_t> masks;
  std::vector<uint32_t> sizes;

  void Clear() {
    actions.clear();
    hashes.clear();
    masks.clear();
    sizes.clear();
  }
};

// Builds the actions for `batch` into `*out` (cleared first):
// - stores become REPORTs and removes REVOKEs at the event's tier;
// - a clear marker expands in place into one CLEAR_ALL_AT_TIER per entry of
//   `clear_tiers`, in order (nothing if the list is empty);
// - consecutive stores (or removes) at the same tier merge into one action;
//   nothing merges across another kind, another tier or a clear;
// - skipped, ignored and empty events were dropped before merging, so they
//   never separate their neighbours.
void BuildActions(const DecodedBatch& batch, std::span<const Tier> clear_tiers,
                  ActionList* out);

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_ACTION_BUILDER_H_
