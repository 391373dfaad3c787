// WorkerRemovalFleet: the synthetic fleet kv-indexer-worker-removal-bench
// loads into a backend, and what GetStats must say about it.
//
// Shape (deterministic; every hash is distinct within its role):
//   * `shared_blocks` blocks held at HBM by every worker (a common system
//     prompt);
//   * `groups` groups of workers (worker w is in group w / (workers /
//     groups)), each group holding `group_blocks` blocks at HBM on every
//     member (a tenant's shared documents);
//   * per worker, private blocks up to placements / workers placements:
//     6 in 8 at HBM, 1 in 8 at DRAM, 1 in 8 at SSD.
// Removal takes out `remove` workers, every other one (0, 2, 4, ...; then the
// odd ones if more than half), so each group loses members evenly. A
// replacement takes a removed worker's place: same group, a new id, new
// private blocks.
//
// Thread safety: none.
#ifndef KVINDEXER_BENCH_WORKER_REMOVAL_FLEET_H_
#define KVINDEXER_BENCH_WORKER_REMOVAL_FLEET_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "kvindexer/backend.h"

namespace kvindexer::bench {

struct FleetShape {
  uint64_t placements = 10'000'000;  // over all workers
  uint32_t workers = 64;
  uint32_t groups = 8;
  uint32_t shared_blocks = 4096;
  uint32_t group_blocks = 32768;
  uint32_t remove = 32;
  // Private blocks of each worker whose first `hit_blocks` a counting Match
  // visits (with every shared and group block), so that hit counters exist.
  uint32_t hit_blocks = 1024;
};

// What GetStats should report.
struct ExpectedCounts {
  uint64_t workers = 0;
  uint64_t placements = 0;
  uint64_t blocks = 0;
};

class WorkerRemovalFleet {
 public:
  // INVALID_ARGUMENT when the shape does not add up (groups not dividing the
  // workers, no room for private blocks, more removals than workers).
  static absl::Status Check(const FleetShape& shape);
  explicit WorkerRemovalFleet(const FleetShape& shape) : shape_(shape) {}

  const FleetShape& shape() const { return shape_; }
  uint64_t private_blocks() const;
  uint64_t placements_per_worker() const;
  // The workers removed, in removal order.
  std::vector<uint32_t> RemovalOrder() const;

  // Worker `slot`'s id in `generation` (0: the first fleet, 1: the
  // replacements).
  static std::string WorkerId(uint32_t slot, uint32_t generation);
  // A private block of (slot, generation): hash `index` of its list.
  static int64_t PrivateHash(uint32_t slot, uint32_t generation,
                             uint64_t index);

  // Applies everything (slot, generation) holds to `backend`, in batches of
  // at most 16,384 hashes (the request limit).
  absl::Status Load(IndexBackend* backend, uint32_t slot,
                    uint32_t generation) const;
  // One counting Match over every shared and group block and the first
  // `hit_blocks` private blocks of each of `present` (slot, generation).
  absl::Status CountHits(
      IndexBackend* backend,
      const std::vector<std::pair<uint32_t, uint32_t>>& present) const;

  // GetStats' counts with the workers in `present` (slots, one generation
  // each) loaded.
  ExpectedCounts Expected(const std::vector<uint32_t>& present_slots) const;

 private:
  uint32_t GroupOf(uint32_t slot) const;
  std::vector<int64_t> SharedHashes() const;
  std::vector<int64_t> GroupHashes(uint32_t group) const;

  FleetShape shape_;
};

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_WORKER_REMOVAL_FLEET_H_
