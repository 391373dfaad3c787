// Event batches in SGLang's msgpack layout for kv-indexer-bridge-bench, packed
// directly with msgpack-cxx (fast enough to generate millions of hashes).
//
// A batch is [ts, [event, ...], dp_rank 0]; every event is a legacy
// BlockStored at GPU (no component labels, so the bridge sends no side
// arrays): ["BlockStored", hashes, nil, token_ids, page_size, nil, "GPU"].
// Hashes are pseudo-random 64-bit values (half negative), a pure function of
// their index, so a run can recompute any batch's hashes without storing
// them.
#ifndef KVINDEXER_BENCH_BRIDGE_PAYLOADS_H_
#define KVINDEXER_BENCH_BRIDGE_PAYLOADS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kvindexer::bench {

struct BatchShape {
  std::string name;  // as given on the command line
  uint32_t stores = 1;
  uint32_t hashes_per_store = 1;
  uint32_t page_size = 1;  // tokens per hash (token_ids has page_size x hashes)

  size_t hashes_per_batch() const { return size_t{stores} * hashes_per_store; }
};

// "<stores>x<hashes>p<page>", e.g. "64x32p16" (64 stores of 32 hashes, page
// size 16) or "1x1024p1".
absl::StatusOr<BatchShape> ParseBatchShape(absl::string_view text);

// The hash with global index `index` (never 0).
int64_t BenchHash(uint64_t index);

// Batch `batch` of `shape` holds the hashes with indexes
// [first, first + hashes_per_batch) where first = base + batch *
// hashes_per_batch.
struct BatchPlan {
  BatchShape shape;
  uint64_t base = 0;
  size_t batches = 0;
  // When > 0 the last batch is cut to this many hashes (its last store
  // shorter), so that a plan can hold an exact number of blocks.
  size_t last_batch_hashes = 0;

  size_t HashesIn(size_t batch) const;
  uint64_t FirstIndex(size_t batch) const {
    return base + batch * shape.hashes_per_batch();
  }
  int64_t LastHash(size_t batch) const {
    return BenchHash(FirstIndex(batch) + HashesIn(batch) - 1);
  }
  size_t TotalHashes() const;
  // Every hash of the plan, batch after batch.
  std::vector<int64_t> AllHashes() const;
};

// A plan of `total_hashes` hashes in batches of `shape` (the last one
// possibly shorter).
BatchPlan PlanForHashes(const BatchShape& shape, uint64_t base,
                        size_t total_hashes);

// The msgpack payload of batch `batch` of `plan`.
std::string PackPlanBatch(const BatchPlan& plan, size_t batch);

// One store of the given hashes (page size 1): warm-up and probe batches.
std::string PackStoreBatch(const std::vector<int64_t>& hashes);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_BRIDGE_PAYLOADS_H_
