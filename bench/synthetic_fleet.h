// SyntheticFleet: a deterministic model of an SGLang fleet that produces the
// ApplyExternalKvBatch traffic its bridges would send and the prefix queries
// its router would ask.
//
// Model:
//   * Prompts are chains of 16-token blocks; a block's hash depends on its
//     parent's hash, so equal prefixes give equal hashes.
//   * A few system prompts are shared fleet-wide; conversations start from one
//     of them (Zipf popularity) and grow turn by turn, each turn extending the
//     previous prompt. Conversations are sticky to one worker.
//   * Each worker caches blocks at HBM and spills to DRAM (CLOCK eviction),
//     reporting REPORT / REVOKE actions like a bridge would. Workers are either
//     legacy (no cache_spec, masks absent) or FULL+SWA (cache_spec set, masks
//     F|S), with block_sizes 16 on every report.
//   * The first `anchor_blocks` of system prompt 0 are pinned on every worker,
//     so a query of that prefix has every worker as a candidate on every block.
//
// Thread safety: none; one thread drives a fleet.
#ifndef KVINDEXER_BENCH_SYNTHETIC_FLEET_H_
#define KVINDEXER_BENCH_SYNTHETIC_FLEET_H_

#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/wire_vocabulary.h"
#include "kv_indexer.pb.h"
#include "zipf_sampler.h"

namespace kvindexer::bench {

namespace v1 = ::kv_indexer::v1;

struct FleetConfig {
  uint32_t workers = 32;
  double swa_fraction = 0.5;  // share of FULL+SWA workers; the rest are legacy
  uint32_t swa_window_tokens = 1024;
  uint32_t block_tokens = 16;
  uint32_t system_prompts = 32;
  uint32_t system_min_blocks = 32;
  uint32_t system_max_blocks = 256;
  uint32_t anchor_blocks = 128;  // pinned prefix of system prompt 0
  uint32_t turn_min_blocks = 4;
  uint32_t turn_max_blocks = 96;
  uint32_t max_prompt_blocks = 2048;
  uint32_t live_conversations = 4096;
  double zipf_s = 1.0;
  double restart_probability = 0.05;  // a live slot starts a new conversation
  uint64_t placements_per_worker = 31250;  // HBM + DRAM capacity
  double hbm_share = 0.4;                  // of placements_per_worker
  uint64_t seed = 1;
};

// Receives finished batches. `worker` is the fleet's worker index.
class BatchSink {
 public:
  virtual void OnBatch(uint32_t worker,
                       v1::ApplyExternalKvBatchRequest&& batch) = 0;

 protected:
  ~BatchSink() = default;
};

class SyntheticFleet {
 public:
  // REQUIRES: config.workers > 0, config.system_min_blocks >=
  // config.anchor_blocks, min <= max for every range.
  explicit SyntheticFleet(const FleetConfig& config);

  // Emits one batch per worker that pins the anchor prefix. Call once, first.
  void EmitAnchors(BatchSink* sink);

  // Serves one request: picks a conversation, extends it by a turn, and lets
  // its worker cache the new blocks. Batches up to `batch_hashes` hashes are
  // handed to `sink` as they fill (`batch_hashes` == 0 flushes after every
  // request, the size a bridge sees for one prefill).
  void Step(uint32_t batch_hashes, BatchSink* sink);

  // Hands every partly filled batch to `sink`.
  void Flush(BatchSink* sink);

  // A prompt an incoming request could carry: a live conversation plus a new
  // turn the index cannot know, clipped/padded to [min_blocks, max_blocks].
  std::vector<int64_t> SampleQuery(uint32_t min_blocks, uint32_t max_blocks);

  // The pinned prefix held by every worker.
  std::vector<int64_t> AnchorQuery() const;

  uint64_t placements() const { return placements_; }
  const FleetConfig& config() const { return config_; }
  bool is_swa_worker(uint32_t worker) const { return workers_[worker].swa; }

 private:
  struct Holding {
    Tier tier = Tier::kHbm;  // HBM or DRAM
    bool referenced = false;
    bool pinned = false;
  };
  struct Worker {
    std::string id;
    std::string address;
    bool swa = false;
    absl::flat_hash_map<int64_t, Holding> holdings;
    std::deque<int64_t> hbm_clock;
    std::deque<int64_t> dram_clock;
    uint64_t hbm_count = 0;
    uint64_t dram_count = 0;
    v1::ApplyExternalKvBatchRequest pending;
    uint32_t pending_hashes = 0;
    uint64_t seq = 0;
  };
  struct Conversation {
    uint32_t worker = 0;
    std::vector<int64_t> hashes;
  };

  int64_t NextHash(int64_t parent);
  void StartConversation(Conversation* conv);
  void ExtendConversation(Conversation* conv);
  void CacheOnWorker(uint32_t w, const std::vector<int64_t>& prompt,
                     uint32_t batch_hashes, BatchSink* sink);
  static uint64_t LowWatermark(uint64_t capacity);
  void EvictHbm(uint32_t w, uint32_t batch_hashes, BatchSink* sink);
  void EvictDram(uint32_t w, uint32_t batch_hashes, BatchSink* sink);
  void AddAction(uint32_t w, ActionType type, Tier tier, int64_t hash,
                 uint32_t batch_hashes, BatchSink* sink);
  void FlushWorker(uint32_t w, BatchSink* sink);
  void StartBatch(uint32_t w);

  FleetConfig config_;
  std::mt19937_64 rng_;
  ZipfSampler system_popularity_;
  ZipfSampler conversation_popularity_;
  std::vector<std::vector<int64_t>> system_prompts_;
  std::vector<Conversation> conversations_;
  std::vector<Worker> workers_;
  uint64_t hbm_capacity_;
  uint64_t dram_capacity_;
  uint64_t placements_ = 0;
  uint64_t salt_ = 0;
};

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_SYNTHETIC_FLEET_H_
