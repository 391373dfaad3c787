// The bridges of kv-indexer-fleet-bench: batches of fresh, random block
// hashes, one chain per batch, appended to the fleet event log through the
// bridge's own sink (bridge/log_applier.h, the KV_INDEXER_SINK=jetstream
// path of docs/fleet.md), one LogApplier per worker as one bridge per
// worker would hold. Nothing of the ZMQ side of a bridge runs: "a bridge
// has a batch" is the moment LogApplier::Apply is called.
//
// The hashes of batch i of worker w depend only on (seed, w, i), so the
// queries of a later phase can be made from a log written earlier.
//
// Thread safety: the functions are thread-safe; each runs its own threads.
#ifndef KVINDEXER_BENCH_FLEET_TRAFFIC_H_
#define KVINDEXER_BENCH_FLEET_TRAFFIC_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "fleet/event_log.h"
#include "kv_indexer.pb.h"
#include "latency_recorder.h"

namespace kvindexer::bench {

// "bench-w<w>".
std::string FleetWorkerId(uint32_t worker);

// The `n` hashes of batch `index` of `worker`.
std::vector<int64_t> FleetBatchHashes(uint64_t seed, uint32_t worker,
                                      uint64_t index, uint32_t n);

// A seed-era apply of those hashes: one REPORT at HBM.
::kv_indexer::v1::ApplyExternalKvBatchRequest FleetBatch(
    uint32_t worker, const std::vector<int64_t>& hashes);

struct BulkAppendOptions {
  uint64_t seed = 1;
  uint32_t workers = 8;
  uint64_t batches_per_worker = 1;
  uint32_t batch_hashes = 16384;
  // Batch indexes of each worker start here (so that a second append to the
  // same log writes new hashes).
  uint64_t first_index = 0;
};

struct BulkAppendResult {
  double seconds = 0;
  uint64_t batches = 0;
  uint64_t hashes = 0;
};

// Every worker appends its batches as fast as the log acknowledges them,
// workers in parallel. Fails with the first append error.
[[nodiscard]] absl::StatusOr<BulkAppendResult> BulkAppend(
    fleet::EventLog& log, const BulkAppendOptions& options);

struct PacedAppendOptions {
  uint64_t seed = 1;
  uint32_t workers = 8;
  double batches_per_s = 200;  // all workers together
  uint32_t min_hashes = 32;
  uint32_t max_hashes = 64;
  uint64_t max_batches = 0;  // all workers together; 0: until `stop`
  uint64_t first_index = 0;  // as BulkAppendOptions
  const std::atomic<bool>* stop = nullptr;
  std::chrono::seconds max_duration = std::chrono::seconds(600);
};

struct PacedBatch {
  uint32_t worker = 0;
  uint64_t index = 0;
  std::vector<int64_t> hashes;
  std::chrono::steady_clock::time_point apply_called;
};

struct PacedAppendResult {
  double seconds = 0;
  uint64_t batches = 0;
  uint64_t hashes = 0;
  uint64_t failed = 0;
  uint64_t late = 0;          // called more than 5 ms behind its schedule
  LatencySummary append_ack;  // Apply called -> Apply returned OK
};

// Each worker appends batches of min..max hashes on a fixed schedule (the
// workers offset from each other), one at a time. `on_batch` runs on the
// worker's thread right before Apply is called.
[[nodiscard]] PacedAppendResult PacedAppend(
    fleet::EventLog& log, const PacedAppendOptions& options,
    const std::function<void(const PacedBatch&)>& on_batch);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_FLEET_TRAFFIC_H_
