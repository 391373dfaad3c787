#include "ingest_plan.h"

#include <utility>

namespace kvindexer::bench {

IngestPlan MakePlan(SyntheticFleet* fleet, uint32_t batch_hashes,
                    uint64_t hashes) {
  PlanSink sink(fleet->config().workers);
  const uint64_t max_steps = hashes * 4 + 1000;
  for (uint64_t s = 0; s < max_steps && sink.hashes() < hashes; ++s) {
    fleet->Step(batch_hashes, &sink);
  }
  fleet->Flush(&sink);
  return sink.Take();
}

void AppendInverse(IngestPlan* plan, uint32_t block_tokens) {
  constexpr uint32_t kFullSwa = 3;
  for (auto& queue : plan->per_worker) {
    const size_t n = queue.size();
    for (size_t i = n; i-- > 0;) {
      const v1::ApplyExternalKvBatchRequest& b = queue[i];
      v1::ApplyExternalKvBatchRequest inv;
      inv.set_worker_id(b.worker_id());
      inv.set_worker_address(b.worker_address());
      inv.set_seq(b.seq());
      if (b.has_cache_spec()) *inv.mutable_cache_spec() = b.cache_spec();
      for (int a = b.actions_size(); a-- > 0;) {
        const v1::ExternalKvAction& src = b.actions(a);
        v1::ExternalKvAction* dst = inv.add_actions();
        dst->set_tier(src.tier());
        *dst->mutable_hashes() = src.hashes();
        if (src.type() == v1::ACTION_REPORT) {
          dst->set_type(v1::ACTION_REVOKE);
          continue;
        }
        dst->set_type(v1::ACTION_REPORT);
        for (int h = 0; h < src.hashes_size(); ++h) {
          if (b.has_cache_spec()) dst->add_component_masks(kFullSwa);
          dst->add_block_sizes(block_tokens);
        }
      }
      plan->hashes += BatchHashes(inv);
      ++plan->batches;
      queue.push_back(std::move(inv));
    }
  }
}

}  // namespace kvindexer::bench
