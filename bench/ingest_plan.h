// Ingest plans for kv-indexer-bench: the apply batches a phase sends, built by
// stepping the synthetic fleet ahead of time so that generating them costs
// nothing while the phase is timed.
#ifndef KVINDEXER_BENCH_INGEST_PLAN_H_
#define KVINDEXER_BENCH_INGEST_PLAN_H_

#include <cstdint>
#include <utility>

#include "load_client.h"
#include "synthetic_fleet.h"

namespace kvindexer::bench {

// Collects batches per worker into an IngestPlan.
class PlanSink final : public BatchSink {
 public:
  explicit PlanSink(uint32_t workers) { plan_.per_worker.resize(workers); }
  void OnBatch(uint32_t worker,
               v1::ApplyExternalKvBatchRequest&& batch) override {
    plan_.hashes += BatchHashes(batch);
    ++plan_.batches;
    plan_.per_worker[worker].push_back(std::move(batch));
  }
  IngestPlan Take() {
    IngestPlan out = std::move(plan_);
    plan_ = IngestPlan();
    plan_.per_worker.resize(out.per_worker.size());
    return out;
  }
  uint64_t hashes() const { return plan_.hashes; }

 private:
  IngestPlan plan_;
};

// Steps the fleet until `hashes` hashes are planned (or a step bound is
// reached), in batches of `batch_hashes` (0: one batch per request).
[[nodiscard]] IngestPlan MakePlan(SyntheticFleet* fleet, uint32_t batch_hashes,
                                  uint64_t hashes);

// Appends to each worker's queue the inverse of its batches in reverse
// order (REPORT <-> REVOKE, actions reversed), so cycling the plan keeps the
// index near its size while every pass does real inserts and removals
// instead of re-applying what is already there.
void AppendInverse(IngestPlan* plan, uint32_t block_tokens);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_INGEST_PLAN_H_
