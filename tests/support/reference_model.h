// ReferenceModel: a deliberately plain, single-threaded model of the index
// and of the whole kv_indexer.v1 contract, for tests. It favours obviousness
// over speed: std::map state, the validation table written out step by step,
// and a per-worker prefix recomputation that tries every boundary instead of
// the single-pass scanner that core uses. It shares no code with core or with
// any backend, so it can be the oracle of differential tests at two levels:
//
//   * the request level (Apply, Match, MatchPrefix, HitCounts): what the
//     server answers, validation and normalisation included;
//   * the backend level (Store, CountHits and the read accessors): what an
//     IndexBackend holds after the calls backend.h describes. ModelBackend
//     (model_backend.h) serves this state through the IndexBackend interface.
//
// Where the contract leaves an order unspecified (workers first met on the
// same block, ties between equal prefixes) the model orders by worker id;
// differential tests normalise both sides the same way before comparing.
//
// Thread safety: none; one model per test.
#ifndef KVINDEXER_TESTS_SUPPORT_REFERENCE_MODEL_H_
#define KVINDEXER_TESTS_SUPPORT_REFERENCE_MODEL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "kv_indexer.pb.h"
#include "kvindexer/backend.h"

namespace kvindexer::test_support {

namespace v1 = ::kv_indexer::v1;

class ReferenceModel {
 public:
  struct Block {
    uint32_t token_count = 0;
    // (worker id, tier) -> component mask.
    std::map<std::pair<std::string, uint32_t>, uint32_t> placements;
  };
  struct Worker {
    // The lowest ordinal no other worker has, taken when first seen: 0, 1,
    // ... until RemoveWorker frees one (backend.h, ABI 1.1).
    uint32_t ordinal = 0;
    std::string address;
    std::optional<CacheSpec> spec;
    std::map<uint32_t, std::set<int64_t>> holdings;  // tier -> hashes
  };

  // The request level. A request that fails validation changes nothing.
  absl::Status Apply(const v1::ApplyExternalKvBatchRequest& req);
  absl::Status Match(const v1::MatchExternalKvRequest& req,
                     v1::MatchExternalKvResponse* resp);
  absl::Status MatchPrefix(const v1::MatchExternalKvPrefixRequest& req,
                           v1::MatchExternalKvPrefixResponse* resp) const;
  absl::Status HitCounts(const v1::GetExternalKvHitCountsRequest& req,
                         v1::GetExternalKvHitCountsResponse* resp) const;

  // The backend level: IndexBackend::Apply as backend.h words it. Nothing is
  // validated or collapsed; actions and their hashes apply in order.
  void Store(const ApplyBatchView& batch);
  // Raises the hit counter of every hash in `hashes` that has a block by one
  // (created at 1, saturating), once per occurrence.
  void CountHits(const std::vector<int64_t>& hashes);
  // IndexBackend::RemoveWorker: revokes every placement of `id` (blocks left
  // with none go with their hit counters) and deletes its record. Returns
  // whether there was a record.
  bool RemoveWorker(const std::string& id);

  const std::map<int64_t, Block>& blocks() const { return blocks_; }
  const std::map<std::string, Worker>& workers() const { return workers_; }
  const std::map<int64_t, uint64_t>& hits() const { return hits_; }

  // Sizes in the terms of BackendStats.
  uint64_t block_count() const { return blocks_.size(); }
  uint64_t placement_count() const;
  uint64_t worker_count() const { return workers_.size(); }
  uint64_t hit_counter_count() const { return hits_.size(); }

 private:
  static absl::Status Validate(const v1::ApplyExternalKvBatchRequest& req);
  // Creates the worker if new; sets its address and spec.
  Worker& Upsert(const std::string& id, std::string address,
                 std::optional<CacheSpec> spec);
  void Report(const std::string& worker, uint32_t tier, int64_t hash,
              uint32_t mask, uint32_t size);
  void Revoke(const std::string& worker, uint32_t tier, int64_t hash);
  void Clear(const std::string& worker, uint32_t tier);
  // The reusable prefix of `worker` over blocks[0..limit) of `hashes`.
  uint32_t WorkerPrefix(const std::string& worker,
                        const v1::MatchExternalKvPrefixRequest& req,
                        uint32_t limit) const;

  std::map<int64_t, Block> blocks_;
  std::map<std::string, Worker> workers_;
  std::map<int64_t, uint64_t> hits_;
};

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_REFERENCE_MODEL_H_
