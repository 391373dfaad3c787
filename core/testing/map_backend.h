// MapBackend: a small, obviously-correct IndexBackend for core tests. It
// follows the backend.h obligations with ordered std::maps and one mutex, and
// records every call it receives so that tests can check what reached it.
// Test-only; not built into kvindexer_core.
#ifndef KVINDEXER_CORE_TESTING_MAP_BACKEND_H_
#define KVINDEXER_CORE_TESTING_MAP_BACKEND_H_

#include <stdint.h>

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/backend_status.h"
#include "kvindexer/backend.h"

namespace kvindexer::testing {

class MapBackend final : public IndexBackend {
 public:
  // A copy of one action as the backend received it.
  struct RecordedAction {
    uint32_t type;
    uint32_t tier;
    std::vector<int64_t> hashes;
    std::vector<uint32_t> masks;
    std::vector<uint32_t> sizes;
  };
  struct RecordedBatch {
    std::string worker_id;
    std::string worker_address;
    std::optional<CacheSpec> spec;
    std::vector<RecordedAction> actions;
  };

  // Every call that reached the backend, in order.
  std::vector<RecordedBatch> applies;
  std::vector<std::vector<int64_t>> matches;
  std::vector<std::vector<int64_t>> prefix_scans;
  std::vector<std::vector<int64_t>> hit_count_calls;
  size_t blocks_visited = 0;  // OnBlock calls made by the last PrefixScan
  // When set, every call fails with this status.
  std::optional<BackendStatus> fail_with;

  size_t calls() const {
    return applies.size() + matches.size() + prefix_scans.size() +
           hit_count_calls.size();
  }

  BackendStatus Apply(const ApplyBatchView& batch) noexcept override {
    std::lock_guard<std::mutex> lock(mu_);
    RecordedBatch rec;
    rec.worker_id.assign(batch.worker_id.data, batch.worker_id.size);
    rec.worker_address.assign(batch.worker_address.data,
                              batch.worker_address.size);
    if (batch.has_cache_spec) rec.spec = batch.cache_spec;
    for (size_t i = 0; i < batch.action_count; ++i) {
      const ActionView& a = batch.actions[i];
      rec.actions.push_back(
          RecordedAction{a.type, a.tier, Copy(a.hashes.data, a.hashes.size),
                         Copy(a.component_masks.data, a.component_masks.size),
                         Copy(a.block_sizes.data, a.block_sizes.size)});
    }
    applies.push_back(rec);
    if (fail_with) return *fail_with;

    const uint32_t w = WorkerOrdinal(rec.worker_id);
    workers_[w].address = rec.worker_address;
    workers_[w].spec = rec.spec;
    for (const RecordedAction& a : rec.actions) {
      switch (a.type) {
        case kActionReport:
          for (size_t i = 0; i < a.hashes.size(); ++i) {
            Block& b = blocks_[a.hashes[i]];
            b.placements[{w, a.tier}] = a.masks.empty() ? 0 : a.masks[i];
            if (!a.sizes.empty() && a.sizes[i] > 0) b.tokens = a.sizes[i];
            workers_[w].holdings[a.tier].insert(a.hashes[i]);
          }
          break;
        case kActionRevoke:
          for (int64_t h : a.hashes) Revoke(w, a.tier, h);
          break;
        case kActionClearAllAtTier: {
          const std::set<int64_t> held = workers_[w].holdings[a.tier];
          for (int64_t h : held) Revoke(w, a.tier, h);
          break;
        }
        default:
          return MakeBackendStatus(BackendCode::kInvalidArgument, "bad type");
      }
    }
    return BackendOk();
  }

  BackendStatus Match(HashSpan hashes, bool count_as_hit,
                      BlockVisitor* visitor) noexcept override {
    std::lock_guard<std::mutex> lock(mu_);
    matches.push_back(Copy(hashes.data, hashes.size));
    if (fail_with) return *fail_with;
    std::set<uint32_t> announced;
    for (size_t i = 0; i < hashes.size; ++i) {
      if (count_as_hit && blocks_.count(hashes.data[i]) != 0) {
        uint64_t& c = hits_[hashes.data[i]];
        if (c != UINT64_MAX) ++c;
      }
      if (!Visit(i, hashes.data[i], announced, visitor)) break;
    }
    return BackendOk();
  }

  BackendStatus PrefixScan(HashSpan hashes,
                           BlockVisitor* visitor) noexcept override {
    std::lock_guard<std::mutex> lock(mu_);
    prefix_scans.push_back(Copy(hashes.data, hashes.size));
    blocks_visited = 0;
    if (fail_with) return *fail_with;
    std::set<uint32_t> announced;
    for (size_t i = 0; i < hashes.size; ++i) {
      ++blocks_visited;
      if (!Visit(i, hashes.data[i], announced, visitor)) break;
    }
    return BackendOk();
  }

  BackendStatus HitCounts(HashSpan hashes, uint64_t* counts) noexcept override {
    std::lock_guard<std::mutex> lock(mu_);
    hit_count_calls.push_back(Copy(hashes.data, hashes.size));
    if (fail_with) return *fail_with;
    for (size_t i = 0; i < hashes.size; ++i) {
      auto it = hits_.find(hashes.data[i]);
      counts[i] = it == hits_.end() ? 0 : it->second;
    }
    return BackendOk();
  }

  void GetStats(BackendStats* stats) noexcept override {
    std::lock_guard<std::mutex> lock(mu_);
    stats->blocks = blocks_.size();
    stats->workers = workers_.size();
    stats->hit_counters = hits_.size();
    stats->placements = 0;
    for (const auto& [h, b] : blocks_) stats->placements += b.placements.size();
    stats->memory_bytes = 0;
  }

 private:
  struct Block {
    uint32_t tokens = 0;
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> placements;
  };
  struct Worker {
    std::string id;
    std::string address;
    std::optional<CacheSpec> spec;
    std::map<uint32_t, std::set<int64_t>> holdings;
  };

  template <typename T>
  static std::vector<T> Copy(const T* data, size_t n) {
    return n == 0 ? std::vector<T>() : std::vector<T>(data, data + n);
  }

  uint32_t WorkerOrdinal(const std::string& id) {
    for (uint32_t w = 0; w < workers_.size(); ++w) {
      if (workers_[w].id == id) return w;
    }
    workers_.push_back(Worker{id, "", std::nullopt, {}});
    return static_cast<uint32_t>(workers_.size() - 1);
  }

  void Revoke(uint32_t w, uint32_t tier, int64_t h) {
    auto it = blocks_.find(h);
    if (it == blocks_.end()) return;
    it->second.placements.erase({w, tier});
    auto& held = workers_[w].holdings[tier];
    held.erase(h);
    if (held.empty()) workers_[w].holdings.erase(tier);
    if (it->second.placements.empty()) {
      blocks_.erase(it);
      hits_.erase(h);
    }
  }

  bool Visit(size_t index, int64_t hash, std::set<uint32_t>& announced,
             BlockVisitor* visitor) {
    BlockView view{index, 0, nullptr, 0};
    std::vector<Placement> placements;
    auto it = blocks_.find(hash);
    if (it != blocks_.end()) {
      for (const auto& [key, mask] : it->second.placements) {
        placements.push_back(Placement{key.first, key.second, mask});
        if (announced.insert(key.first).second) {
          const Worker& wk = workers_[key.first];
          WorkerView wv{key.first, StringView{wk.id.data(), wk.id.size()},
                        StringView{wk.address.data(), wk.address.size()},
                        wk.spec ? 1u : 0u, wk.spec.value_or(CacheSpec{})};
          visitor->OnWorker(wv);
        }
      }
      view.token_count = it->second.tokens;
      view.placements = placements.data();
      view.placement_count = placements.size();
    }
    return visitor->OnBlock(view);
  }

  std::mutex mu_;
  std::map<int64_t, Block> blocks_;
  std::vector<Worker> workers_;
  std::map<int64_t, uint64_t> hits_;
};

}  // namespace kvindexer::testing

#endif  // KVINDEXER_CORE_TESTING_MAP_BACKEND_H_
