#include "bridge/action_builder.h"

#include <algorithm>

namespace kvindexer::bridge {

void BuildActions(const DecodedBatch& batch, std::span<const Tier> clear_tiers,
                  ActionList* out) {
  out->Clear();
  for (const KvEvent& ev : batch.events) {
    if (ev.kind == EventKind::kClear) {
      for (Tier tier : clear_tiers) {
        KvAction clear;
        clear.kind = ActionType::kClearAllAtTier;
        clear.tier = tier;
        clear.hash_begin = out->hashes.size();
        out->actions.push_back(clear);
      }
      continue;
    }
    if (ev.hash_count == 0) continue;
    const ActionType kind = ev.kind == EventKind::kStore ? ActionType::kReport
                                                         : ActionType::kRevoke;
    const bool side = ev.kind == EventKind::kStore && ev.has_components;
    const bool merge = !out->actions.empty() &&
                       out->actions.back().kind == kind &&
                       out->actions.back().tier == ev.tier;
    if (!merge) {
      KvAction action;
      action.kind = kind;
      action.tier = ev.tier;
      action.hash_begin = out->hashes.size();
      out->actions.push_back(action);
    }
    KvAction& action = out->actions.back();
    action.hash_count += ev.hash_count;
    action.has_side_arrays = action.has_side_arrays || side;

    const auto first =
        batch.hashes.begin() + static_cast<std::ptrdiff_t>(ev.hash_begin);
    out->hashes.insert(out->hashes.end(), first,
                       first + static_cast<std::ptrdiff_t>(ev.hash_count));
    out->masks.resize(out->hashes.size(), side ? ev.component_mask : 0u);
    out->sizes.resize(out->hashes.size(), side ? ev.block_size : 0u);
  }
}

}  // namespace kvindexer::bridge
