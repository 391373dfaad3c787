// BackendScenario: one backend plugin loaded through LoadedBackend and filled
// with a known placement set, for the in-process microbenchmarks.
//
// Placement set (deterministic):
//   * the headline prefix: kHeadlineBlocks blocks, each held at HBM by all
//     kHeadlineWorkers workers (so a prefix query of it has 32 candidates on
//     every block);
//   * the distinct-lists prefix: as many blocks, also held by every worker,
//     but worker w holds block b at HBM when w + b is even and at DRAM
//     otherwise, so no block's placement list equals the previous block's
//     (the worst case for the rule engine's run detection; same answer);
//   * filler blocks up to `placements` placements in total, each held by
//     `placements_per_block` of the same workers (tiers HBM and DRAM mixed).
// Odd workers are FULL+SWA (cache_spec set, masks F|S), even workers legacy;
// every block reports 16 tokens. Filling goes through IndexOperations::Apply in
// 16,384-hash batches, the path the server takes.
//
// Thread safety: none; benchmarks use a scenario from one thread.
#ifndef KVINDEXER_BENCH_BACKEND_SCENARIO_H_
#define KVINDEXER_BENCH_BACKEND_SCENARIO_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/backend_loader.h"
#include "core/indexer.h"
#include "kv_indexer.pb.h"

namespace kvindexer::bench {

inline constexpr uint32_t kHeadlineBlocks = 128;
inline constexpr uint32_t kHeadlineWorkers = 32;
inline constexpr uint32_t kBlockTokens = 16;

struct ScenarioSpec {
  std::string backend;  // name or path for LoadedBackend::Load
  uint64_t placements = 10'000'000;
  uint32_t placements_per_block = 4;  // filler blocks; 1..kHeadlineWorkers
};

// The filler block count and hash of block i; shared with the lookup floor so
// both hold the same number of blocks.
uint64_t FillerBlocks(const ScenarioSpec& spec);
int64_t FillerHash(uint64_t block);
std::vector<int64_t> HeadlineHashes();
std::vector<int64_t> DistinctListHashes();

// A request for worker `w` carrying the worker's cache_spec (an apply without
// it would clear a FULL+SWA worker's spec).
v1::ApplyExternalKvBatchRequest WorkerBatch(uint32_t w);
// Appends an action; for REPORT fills masks (F|S on odd workers) and sizes.
void AddAction(uint32_t w, v1::ExternalKvActionType type, v1::TierType tier,
               const std::vector<int64_t>& hashes,
               v1::ApplyExternalKvBatchRequest* batch);

class BackendScenario {
 public:
  // Loads the backend (KV_INDEXER_BACKEND_PATH is the search path) and fills
  // it. Reports the backend's and the RSS view of the memory it took.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<BackendScenario>> Build(
      const ScenarioSpec& spec);

  const ScenarioSpec& spec() const { return spec_; }
  IndexOperations& operations() { return indexer_->operations(); }
  IndexBackend* backend() { return loaded_->backend(); }

  uint64_t placements() const { return placements_; }
  uint64_t blocks() const { return blocks_; }
  uint64_t stats_memory_bytes() const { return stats_memory_bytes_; }
  uint64_t rss_delta_bytes() const { return rss_delta_bytes_; }
  double fill_seconds() const { return fill_seconds_; }
  double fill_cpu_seconds() const { return fill_cpu_seconds_; }

 private:
  BackendScenario() = default;

  ScenarioSpec spec_;
  std::unique_ptr<LoadedBackend> loaded_;
  std::unique_ptr<Indexer> indexer_;
  uint64_t placements_ = 0;  // from GetStats
  uint64_t blocks_ = 0;      // from GetStats
  uint64_t stats_memory_bytes_ = 0;
  uint64_t rss_delta_bytes_ = 0;
  double fill_seconds_ = 0;      // wall time of the fill
  double fill_cpu_seconds_ = 0;  // this thread's CPU time of the fill
};

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_BACKEND_SCENARIO_H_
