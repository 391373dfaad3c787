// Builders for kv_indexer.v1 requests, so that a test reads like the
// behaviour it checks: Batch("w1", "10.0.0.1:9000").Report(kTierHbm, {1, 2}).
// Raw numbers are accepted everywhere so that invalid enum values (tier 4,
// action 999) can be expressed.
//
// Tests that drive an IndexBackend directly build the same Batch and hand the
// backend BatchView(batch).view(), the ABI form of the request.
//
// Test-only.
#ifndef KVINDEXER_TESTS_SUPPORT_REQUESTS_H_
#define KVINDEXER_TESTS_SUPPORT_REQUESTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/wire_vocabulary.h"
#include "kv_indexer.pb.h"
#include "kvindexer/backend.h"

namespace kvindexer::test_support {

namespace v1 = ::kv_indexer::v1;

// Component bits and tier-mask bits come from common/wire_vocabulary.h
// (kComponentFull, kTierBitHbm, ...).

using Hashes = std::vector<int64_t>;
using Masks = std::vector<uint32_t>;

class Batch {
 public:
  explicit Batch(std::string worker_id, std::string address = "");

  Batch& Address(std::string address);
  Batch& Spec(const v1::WorkerCacheSpec& spec);
  Batch& Spec(const CacheSpec& spec);
  Batch& Report(int tier, const Hashes& hashes, const Masks& masks = {},
                const Masks& sizes = {});
  Batch& Revoke(int tier, const Hashes& hashes);
  // Sets seq (the seed-era path ignores it but echoes it).
  Batch& Seq(uint64_t seq);
  // enforce_sequence = true with this epoch and seq: the gated path.
  Batch& Gated(std::string epoch, uint64_t seq);
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

// ReplaceExternalKvSnapshot: Snapshot("w", "addr").Epoch("e").AppliedSeq(7)
//     .Tier(kTierHbm, {1, 2}).
class Snapshot {
 public:
  explicit Snapshot(std::string worker_id, std::string address = "");

  Snapshot& Epoch(std::string epoch);
  Snapshot& AppliedSeq(uint64_t seq);
  Snapshot& Spec(const v1::WorkerCacheSpec& spec);
  // One TierHashes entry; any tier number, valid or not.
  Snapshot& Tier(int tier, const Hashes& hashes, const Masks& masks = {},
                 const Masks& sizes = {});

  const v1::ReplaceExternalKvSnapshotRequest& request() const { return req_; }
  v1::ReplaceExternalKvSnapshotRequest* mutable_request() { return &req_; }
  operator const v1::ReplaceExternalKvSnapshotRequest&() const { return req_; }

 private:
  v1::ReplaceExternalKvSnapshotRequest req_;
};

// ConfigureExpectedWorkers: ExpectedWorkers().Worker("w1", "a1").Worker(...)
class ExpectedWorkers {
 public:
  ExpectedWorkers& Worker(std::string worker_id, std::string address = "");
  ExpectedWorkers& Worker(std::string worker_id, std::string address,
                          const v1::WorkerCacheSpec& spec);

  const v1::ConfigureExpectedWorkersRequest& request() const { return req_; }
  operator const v1::ConfigureExpectedWorkersRequest&() const { return req_; }

 private:
  v1::ConfigureExpectedWorkersRequest req_;
};

// The ApplyBatchView of a request, field for field, as a backend receives
// it. Nothing is validated or collapsed: a test that calls a backend directly
// passes only what the host would (backend.h). REQUIRES: `req` outlives the
// BatchView and is not modified while it lives.
class BatchView {
 public:
  explicit BatchView(const v1::ApplyExternalKvBatchRequest& req);
  BatchView(const BatchView&) = delete;
  BatchView& operator=(const BatchView&) = delete;

  const ApplyBatchView& view() const { return view_; }

 private:
  std::vector<ActionView> actions_;
  ApplyBatchView view_{};
};

v1::WorkerCacheSpec Spec(uint32_t components, uint32_t swa_window_tokens,
                         uint32_t full_tier_mask, uint32_t swa_tier_mask = 0,
                         uint32_t mamba_tier_mask = 0, uint32_t version = 1);
// The ABI form of `spec`, and back.
CacheSpec ToCacheSpec(const v1::WorkerCacheSpec& spec);
v1::WorkerCacheSpec ToWorkerCacheSpec(const CacheSpec& spec);

v1::MatchExternalKvRequest MatchRequest(const Hashes& hashes,
                                        bool count_as_hit = false);
v1::MatchExternalKvPrefixRequest PrefixRequest(const Hashes& hashes,
                                               uint32_t max_blocks = 0);
v1::GetExternalKvHitCountsRequest HitCountsRequest(const Hashes& hashes);
// The stream key (namespace, worker_id, dp_rank) on the wire.
v1::StreamId StreamIdOf(std::string ns, std::string worker, uint32_t rank);

// n hashes: first, first + 1, ..., first + n - 1.
Hashes Range(int64_t first, int64_t n);

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_REQUESTS_H_
