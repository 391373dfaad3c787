// Builders for kv_indexer.v1 requests used by core tests. Test-only.
#ifndef KVINDEXER_CORE_TESTING_REQUESTS_H_
#define KVINDEXER_CORE_TESTING_REQUESTS_H_

#include <stdint.h>

#include <optional>
#include <string>
#include <vector>

#include "kv_indexer.pb.h"

namespace kvindexer::testing {

namespace v1 = ::kv_indexer::v1;

inline constexpr uint32_t kF = 1, kS = 2, kM = 4;
inline constexpr uint32_t kHbmBit = 2, kDramBit = 4;

inline v1::WorkerCacheSpec MakeSpec(uint32_t components, uint32_t window,
                                    uint32_t full, uint32_t swa,
                                    uint32_t mamba = 0, uint32_t version = 1) {
  v1::WorkerCacheSpec spec;
  spec.set_version(version);
  spec.set_components(components);
  spec.set_swa_window_tokens(window);
  spec.set_full_tier_mask(full);
  spec.set_swa_tier_mask(swa);
  spec.set_mamba_tier_mask(mamba);
  return spec;
}

inline v1::ExternalKvAction* AddAction(
    v1::ApplyExternalKvBatchRequest* req, v1::ExternalKvActionType type,
    v1::TierType tier, const std::vector<int64_t>& hashes,
    const std::vector<uint32_t>& masks = {},
    const std::vector<uint32_t>& sizes = {}) {
  v1::ExternalKvAction* a = req->add_actions();
  a->set_type(type);
  a->set_tier(tier);
  for (int64_t h : hashes) a->add_hashes(h);
  for (uint32_t m : masks) a->add_component_masks(m);
  for (uint32_t s : sizes) a->add_block_sizes(s);
  return a;
}

inline v1::ApplyExternalKvBatchRequest Batch(
    const std::string& worker, const std::string& address,
    std::optional<v1::WorkerCacheSpec> spec = std::nullopt) {
  v1::ApplyExternalKvBatchRequest req;
  req.set_worker_id(worker);
  req.set_worker_address(address);
  if (spec) *req.mutable_cache_spec() = *spec;
  return req;
}

// report(w, addr, hashes): one REPORT at HBM, no cache_spec.
inline v1::ApplyExternalKvBatchRequest Report(
    const std::string& worker, const std::string& address,
    const std::vector<int64_t>& hashes) {
  auto req = Batch(worker, address);
  AddAction(&req, v1::ACTION_REPORT, v1::TIER_HBM, hashes);
  return req;
}

inline v1::MatchExternalKvPrefixRequest PrefixRequest(
    const std::vector<int64_t>& hashes, uint32_t max_blocks = 0) {
  v1::MatchExternalKvPrefixRequest req;
  for (int64_t h : hashes) req.add_hashes(h);
  req.set_max_blocks(max_blocks);
  return req;
}

inline v1::MatchExternalKvRequest MatchRequest(
    const std::vector<int64_t>& hashes, bool count_as_hit = false) {
  v1::MatchExternalKvRequest req;
  for (int64_t h : hashes) req.add_hashes(h);
  req.set_count_as_hit(count_as_hit);
  return req;
}

inline v1::GetExternalKvHitCountsRequest HitCountsRequest(
    const std::vector<int64_t>& hashes) {
  v1::GetExternalKvHitCountsRequest req;
  for (int64_t h : hashes) req.add_hashes(h);
  return req;
}

}  // namespace kvindexer::testing

#endif  // KVINDEXER_CORE_TESTING_REQUESTS_H_
