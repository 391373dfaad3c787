// ReferenceModel: a deliberately plain, single-threaded model of the whole
// kv_indexer.v1 contract (docs/contract.md, "State model" to
// "MatchExternalKvPrefix"), used as the oracle of the
// differential test. It favours obviousness over speed: std::map state, the
// validation table written out step by step, and a per-worker prefix
// recomputation that tries every boundary instead of the single-pass scanner
// that core uses. It shares no code with core or with any backend.
//
// Where the contract leaves an order unspecified (workers first met on the
// same block, ties between equal prefixes) the model orders by worker id;
// the differential test normalises both sides the same way before comparing.
//
// Thread safety: none; one model per test.
#ifndef KVINDEXER_TESTS_CONFORMANCE_REFERENCE_MODEL_H_
#define KVINDEXER_TESTS_CONFORMANCE_REFERENCE_MODEL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "kv_indexer.pb.h"

namespace kvindexer::conformance {

namespace v1 = ::kv_indexer::v1;

class ReferenceModel {
 public:
  absl::Status Apply(const v1::ApplyExternalKvBatchRequest& req);
  absl::Status Match(const v1::MatchExternalKvRequest& req,
                     v1::MatchExternalKvResponse* resp);
  absl::Status MatchPrefix(const v1::MatchExternalKvPrefixRequest& req,
                           v1::MatchExternalKvPrefixResponse* resp) const;
  absl::Status HitCounts(const v1::GetExternalKvHitCountsRequest& req,
                         v1::GetExternalKvHitCountsResponse* resp) const;

  // Sizes in the terms of BackendStats.
  uint64_t block_count() const { return blocks_.size(); }
  uint64_t placement_count() const;
  uint64_t worker_count() const { return workers_.size(); }
  uint64_t hit_counter_count() const { return hits_.size(); }

 private:
  struct Block {
    uint32_t token_count = 0;
    // (worker id, tier) -> component mask.
    std::map<std::pair<std::string, uint32_t>, uint32_t> placements;
  };
  struct Worker {
    std::string address;
    std::optional<v1::WorkerCacheSpec> spec;
    std::map<uint32_t, std::set<int64_t>> holdings;  // tier -> hashes
  };

  static absl::Status Validate(const v1::ApplyExternalKvBatchRequest& req);
  void Revoke(const std::string& worker, uint32_t tier, int64_t hash);
  // The reusable prefix of `worker` over blocks[0..limit) of `hashes`.
  uint32_t WorkerPrefix(const std::string& worker,
                        const v1::MatchExternalKvPrefixRequest& req,
                        uint32_t limit) const;

  std::map<int64_t, Block> blocks_;
  std::map<std::string, Worker> workers_;
  std::map<int64_t, uint64_t> hits_;
};

}  // namespace kvindexer::conformance

#endif  // KVINDEXER_TESTS_CONFORMANCE_REFERENCE_MODEL_H_
