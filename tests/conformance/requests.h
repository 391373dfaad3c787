// Builders for kv_indexer.v1 requests, so that a test reads like the
// behaviour it checks: Batch("w1", "10.0.0.1:9000").Report(kTierHbm, {1, 2}).
// Raw numbers are accepted everywhere so that invalid enum values (tier 4,
// action 999) can be expressed.
#ifndef KVINDEXER_TESTS_CONFORMANCE_REQUESTS_H_
#define KVINDEXER_TESTS_CONFORMANCE_REQUESTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kv_indexer.pb.h"
#include "kvindexer/backend.h"

namespace kvindexer::conformance {

namespace v1 = ::kv_indexer::v1;

inline constexpr uint32_t kFull = 1;
inline constexpr uint32_t kSwa = 2;
inline constexpr uint32_t kMamba = 4;
inline constexpr uint32_t kHbmBit = 1U << kTierHbm;
inline constexpr uint32_t kDramBit = 1U << kTierDram;
inline constexpr uint32_t kSsdBit = 1U << kTierSsd;

using Hashes = std::vector<int64_t>;
using Masks = std::vector<uint32_t>;

class Batch {
 public:
  explicit Batch(std::string worker_id, std::string address = "");

  Batch& Address(std::string address);
  Batch& Spec(const v1::WorkerCacheSpec& spec);
  Batch& Report(int tier, const Hashes& hashes, const Masks& masks = {},
                const Masks& sizes = {});
  Batch& Revoke(int tier, const Hashes& hashes);
  Batch& Clear(int tier, const Hashes& hashes = {});
  // Any type and tier number, valid or not.
  Batch& Action(int type, int tier, const Hashes& hashes,
                const Masks& masks = {}, const Masks& sizes = {});

  const v1::ApplyExternalKvBatchRequest& request() const { return req_; }
  v1::ApplyExternalKvBatchRequest* mutable_request() { return &req_; }
  operator const v1::ApplyExternalKvBatchRequest&() const { return req_; }

 private:
  v1::ApplyExternalKvBatchRequest req_;
};

v1::WorkerCacheSpec Spec(uint32_t components, uint32_t swa_window_tokens,
                         uint32_t full_tier_mask, uint32_t swa_tier_mask = 0,
                         uint32_t mamba_tier_mask = 0, uint32_t version = 1);

v1::MatchExternalKvRequest MatchRequest(const Hashes& hashes,
                                        bool count_as_hit = false);
v1::MatchExternalKvPrefixRequest PrefixRequest(const Hashes& hashes,
                                               uint32_t max_blocks = 0);
v1::GetExternalKvHitCountsRequest HitCountsRequest(const Hashes& hashes);

// 0, 1, ..., n-1 offset by `first`.
Hashes Range(int64_t first, int64_t n);

}  // namespace kvindexer::conformance

#endif  // KVINDEXER_TESTS_CONFORMANCE_REQUESTS_H_
