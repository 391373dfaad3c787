#include "bridge/recovery_fold.h"

#include <algorithm>
#include <utility>

#include "bridge/event_decoder.h"

namespace kvindexer::bridge {

void FoldedPlacement::Apply(const ActionList& actions) {
  for (const KvAction& action : actions.actions) {
    auto& tier = tiers_[TierIndex(action.tier)];
    switch (action.kind) {
      case ActionType::kClearAllAtTier:
        tier.clear();
        break;
      case ActionType::kRevoke:
        for (size_t i = 0; i < action.hash_count; ++i) {
          tier.erase(actions.hashes[action.hash_begin + i]);
        }
        break;
      case ActionType::kReport:
        for (size_t i = 0; i < action.hash_count; ++i) {
          const size_t at = action.hash_begin + i;
          auto [it, inserted] = tier.try_emplace(actions.hashes[at]);
          if (inserted) it->second.order = next_order_++;
          it->second.mask = actions.masks[at];
          if (actions.sizes[at] > 0) it->second.size = actions.sizes[at];
        }
        break;
    }
  }
}

std::vector<kv_indexer::v1::TierHashes> FoldedPlacement::ToTierHashes() const {
  std::vector<kv_indexer::v1::TierHashes> out;
  for (size_t t = 0; t < kTierCount; ++t) {
    if (tiers_[t].empty()) continue;
    std::vector<std::pair<uint64_t, int64_t>> ordered;
    ordered.reserve(tiers_[t].size());
    bool side = false;
    for (const auto& [hash, slot] : tiers_[t]) {
      ordered.emplace_back(slot.order, hash);
      side = side || slot.mask != 0 || slot.size != 0;
    }
    std::sort(ordered.begin(), ordered.end());
    kv_indexer::v1::TierHashes& entry = out.emplace_back();
    entry.set_tier(static_cast<kv_indexer::v1::TierType>(t + 1));
    for (const auto& [order, hash] : ordered) {
      entry.add_hashes(hash);
      if (side) {
        const Slot& slot = tiers_[t].at(hash);
        entry.add_component_masks(slot.mask);
        entry.add_block_sizes(slot.size);
      }
    }
  }
  return out;
}

size_t FoldedPlacement::size() const {
  size_t n = 0;
  for (const auto& tier : tiers_) n += tier.size();
  return n;
}

FoldResult FoldBatches(std::span<const LiveBatch> batches,
                       std::span<const Tier> clear_tiers) {
  FoldResult result;
  EventDecoder decoder;
  DecodedBatch decoded;
  ActionList actions;
  for (const LiveBatch& batch : batches) {
    if (!decoder.Decode(batch.payload, &decoded).ok()) {
      result.undecodable.push_back(batch.seq);
      continue;
    }
    result.events += decoded.event_count;
    BuildActions(decoded, clear_tiers, &actions);
    result.placement.Apply(actions);
  }
  return result;
}

}  // namespace kvindexer::bridge
