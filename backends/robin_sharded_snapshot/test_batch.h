// Test helpers: an owning builder for ApplyBatchView and a visitor that
// records everything a backend reports. Test-only.
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_TEST_BATCH_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_TEST_BATCH_H_

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "kvindexer/backend.h"

namespace kvindexer::robin::testing {

class TestBatch {
 public:
  TestBatch(std::string worker, std::string address)
      : worker_(std::move(worker)), address_(std::move(address)) {}

  TestBatch& Spec(const CacheSpec& spec) {
    has_spec_ = true;
    spec_ = spec;
    return *this;
  }
  TestBatch& Report(uint32_t tier, std::vector<int64_t> hashes,
                    std::vector<uint32_t> masks = {},
                    std::vector<uint32_t> sizes = {}) {
    actions_.push_back({kActionReport, tier, std::move(hashes),
                        std::move(masks), std::move(sizes)});
    return *this;
  }
  TestBatch& Revoke(uint32_t tier, std::vector<int64_t> hashes) {
    actions_.push_back({kActionRevoke, tier, std::move(hashes), {}, {}});
    return *this;
  }
  TestBatch& Clear(uint32_t tier) {
    actions_.push_back({kActionClearAllAtTier, tier, {}, {}, {}});
    return *this;
  }

  // The view is valid while this builder lives and is not modified.
  const ApplyBatchView& View() {
    views_.clear();
    for (const Action& a : actions_) {
      ActionView v;
      v.type = a.type;
      v.tier = a.tier;
      v.hashes = HashSpan{a.hashes.data(), a.hashes.size()};
      v.component_masks = U32Span{a.masks.data(), a.masks.size()};
      v.block_sizes = U32Span{a.sizes.data(), a.sizes.size()};
      views_.push_back(v);
    }
    view_.worker_id = StringView{worker_.data(), worker_.size()};
    view_.worker_address = StringView{address_.data(), address_.size()};
    view_.has_cache_spec = has_spec_ ? 1 : 0;
    view_.cache_spec = spec_;
    view_.actions = views_.data();
    view_.action_count = views_.size();
    return view_;
  }

 private:
  struct Action {
    uint32_t type;
    uint32_t tier;
    std::vector<int64_t> hashes;
    std::vector<uint32_t> masks;
    std::vector<uint32_t> sizes;
  };
  std::string worker_;
  std::string address_;
  bool has_spec_ = false;
  CacheSpec spec_{};
  std::vector<Action> actions_;
  std::vector<ActionView> views_;
  ApplyBatchView view_{};
};

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

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_TEST_BATCH_H_
