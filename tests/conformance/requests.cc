#include "requests.h"

#include <utility>

namespace kvindexer::conformance {

Batch::Batch(std::string worker_id, std::string address) {
  req_.set_worker_id(std::move(worker_id));
  req_.set_worker_address(std::move(address));
}

Batch& Batch::Address(std::string address) {
  req_.set_worker_address(std::move(address));
  return *this;
}

Batch& Batch::Spec(const v1::WorkerCacheSpec& spec) {
  *req_.mutable_cache_spec() = spec;
  return *this;
}

Batch& Batch::Report(int tier, const Hashes& hashes, const Masks& masks,
                     const Masks& sizes) {
  return Action(kActionReport, tier, hashes, masks, sizes);
}

Batch& Batch::Revoke(int tier, const Hashes& hashes) {
  return Action(kActionRevoke, tier, hashes);
}

Batch& Batch::Clear(int tier, const Hashes& hashes) {
  return Action(kActionClearAllAtTier, tier, hashes);
}

Batch& Batch::Action(int type, int tier, const Hashes& hashes,
                     const Masks& masks, const Masks& sizes) {
  v1::ExternalKvAction* a = req_.add_actions();
  a->set_type(static_cast<v1::ExternalKvActionType>(type));
  a->set_tier(static_cast<v1::TierType>(tier));
  a->mutable_hashes()->Add(hashes.begin(), hashes.end());
  a->mutable_component_masks()->Add(masks.begin(), masks.end());
  a->mutable_block_sizes()->Add(sizes.begin(), sizes.end());
  return *this;
}

v1::WorkerCacheSpec Spec(uint32_t components, uint32_t swa_window_tokens,
                         uint32_t full_tier_mask, uint32_t swa_tier_mask,
                         uint32_t mamba_tier_mask, uint32_t version) {
  v1::WorkerCacheSpec spec;
  spec.set_version(version);
  spec.set_components(components);
  spec.set_swa_window_tokens(swa_window_tokens);
  spec.set_full_tier_mask(full_tier_mask);
  spec.set_swa_tier_mask(swa_tier_mask);
  spec.set_mamba_tier_mask(mamba_tier_mask);
  return spec;
}

v1::MatchExternalKvRequest MatchRequest(const Hashes& hashes,
                                        bool count_as_hit) {
  v1::MatchExternalKvRequest req;
  req.mutable_hashes()->Add(hashes.begin(), hashes.end());
  req.set_count_as_hit(count_as_hit);
  return req;
}

v1::MatchExternalKvPrefixRequest PrefixRequest(const Hashes& hashes,
                                               uint32_t max_blocks) {
  v1::MatchExternalKvPrefixRequest req;
  req.mutable_hashes()->Add(hashes.begin(), hashes.end());
  req.set_max_blocks(max_blocks);
  return req;
}

v1::GetExternalKvHitCountsRequest HitCountsRequest(const Hashes& hashes) {
  v1::GetExternalKvHitCountsRequest req;
  req.mutable_hashes()->Add(hashes.begin(), hashes.end());
  return req;
}

Hashes Range(int64_t first, int64_t n) {
  Hashes out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.push_back(first + i);
  return out;
}

}  // namespace kvindexer::conformance
