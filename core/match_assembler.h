// Response assembly for MatchExternalKv (docs/contract.md,
// "MatchExternalKv > Matching and response order").
//
// MatchExternalKv: workers in the order they are first met while scanning the
// (deduplicated) request; per worker, hashes_by_tier sorted by tier with only
// non-empty tiers; hashes in request order; component_masks and block_sizes
// always filled and aligned; addresses as stored, empty ones included.
#ifndef KVINDEXER_CORE_MATCH_ASSEMBLER_H_
#define KVINDEXER_CORE_MATCH_ASSEMBLER_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/worker_slot_map.h"
#include "kv_indexer.pb.h"
#include "kvindexer/backend.h"

namespace kvindexer {

// A BlockVisitor for IndexBackend::Match that writes straight into the
// response. Use once per call.
class MatchAssembler final : public BlockVisitor {
 public:
  // `hashes` is the list the backend was given (BlockView::index indexes
  // it). `slots`, when given, is a map kept between calls (RunMatch keeps
  // one per thread) that the assembler clears and uses, so that a match
  // costs the workers it meets, not the largest ordinal among them; without
  // it the assembler uses its own. REQUIRES: `hashes`, `resp` and `slots`
  // outlive the assembler, and no other assembler uses `slots` meanwhile.
  MatchAssembler(HashSpan hashes,
                 ::kv_indexer::v1::MatchExternalKvResponse* resp,
                 WorkerSlotMap* slots = nullptr);

  void OnWorker(const WorkerView& worker) noexcept override;
  bool OnBlock(const BlockView& block) noexcept override;

  // Puts hashes_by_tier in tier order. Fails with INTERNAL when the backend
  // produced something a conforming backend cannot (an unknown worker, a tier
  // outside 1..3, a block index out of range).
  [[nodiscard]] absl::Status Finish();

 private:
  struct Worker {
    std::string id;
    std::string address;
    // Index of the worker's entry in resp_->matches, or -1 before its first
    // placement.
    int32_t match = -1;
    // Index into the entry's hashes_by_tier for each tier, or -1.
    int8_t tier_entry[kMaxTier + 1] = {-1, -1, -1, -1};
  };

  HashSpan hashes_;
  ::kv_indexer::v1::MatchExternalKvResponse* resp_;
  WorkerSlotMap own_slots_;
  WorkerSlotMap& worker_of_;  // ordinal -> index into workers_
  std::vector<Worker> workers_;
  std::string error_;  // first inconsistency reported by the backend
};

// Runs MatchExternalKv on `backend`. REQUIRES: the request is valid.
[[nodiscard]] absl::Status RunMatch(
    IndexBackend* backend, const ::kv_indexer::v1::MatchExternalKvRequest& req,
    ::kv_indexer::v1::MatchExternalKvResponse* resp);

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_MATCH_ASSEMBLER_H_
