// A visitor that records everything a backend reports, for robin's tests.
// Batches are built with test_support::Batch (tests/support/requests.h).
// Test-only.
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_RECORDING_VISITOR_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_RECORDING_VISITOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kvindexer/backend.h"

namespace kvindexer::robin::testing {

// What one Match or PrefixScan reported, with the obligations checked as the
// callbacks arrive.
class RecordingVisitor : public BlockVisitor {
 public:
  struct Worker {
    std::string id;
    std::string address;
    uint32_t has_spec;
    CacheSpec spec;
  };
  struct Block {
    size_t index;
    uint32_t token_count;
    // (worker id, tier) -> mask
    std::map<std::pair<std::string, uint32_t>, uint32_t> placements;
  };

  explicit RecordingVisitor(size_t stop_after = SIZE_MAX)
      : stop_after_(stop_after) {}
  virtual ~RecordingVisitor() = default;

  void OnWorker(const WorkerView& w) noexcept override {
    if (!workers
             .emplace(w.worker,
                      Worker{std::string(w.id.data, w.id.size),
                             std::string(w.address.data, w.address.size),
                             w.has_cache_spec, w.cache_spec})
             .second) {
      errors.push_back("OnWorker twice for ordinal " +
                       std::to_string(w.worker));
    }
  }
  bool OnBlock(const BlockView& b) noexcept override {
    Block block{b.index, b.token_count, {}};
    for (size_t i = 0; i < b.placement_count; ++i) {
      const Placement& p = b.placements[i];
      auto it = workers.find(p.worker);
      if (it == workers.end()) {
        errors.push_back("placement of ordinal " + std::to_string(p.worker) +
                         " before its OnWorker");
        continue;
      }
      block.placements[{it->second.id, p.tier}] = p.mask;
    }
    if (b.placement_count == 0 && b.token_count != 0) {
      errors.push_back("absent block with a token count");
    }
    blocks.push_back(std::move(block));
    return blocks.size() < stop_after_;
  }

  std::map<uint32_t, Worker> workers;
  std::vector<Block> blocks;
  std::vector<std::string> errors;

 private:
  size_t stop_after_;
};

inline bool Ok(const BackendStatus& s) { return s.code == BackendCode::kOk; }

}  // namespace kvindexer::robin::testing

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_RECORDING_VISITOR_H_
