// A backend written against backend ABI 1.0 and nothing later: it implements
// the five calls of 1.0 (Apply, Match, PrefixScan, HitCounts, GetStats) and
// uses only what the 1.0 kit had. It is the check of docs/backend-abi.md,
// "Source compatibility across minors": this source compiles unchanged
// against today's kvindexer/backend.h, whose later calls (RemoveWorker,
// CountPlacements) have defaults, and passes the conformance suite at minor 0.
//
// tests/conformance/CMakeLists.txt builds it twice; the two differ only in
// what the descriptor says (KVINDEXER_ABI_1_0_PINNED):
//   * pinned (1): abi_minor written out as 0, as a 1.0 plugin states it. The
//     host never calls what 1.1 and 1.2 added.
//   * rebuilt (0): kit::MakeDescriptor, which says this header's minor, as
//     a 1.0 plugin that is simply rebuilt does. The host finds RemoveWorker
//     left to the header's default when it loads the backend, and uses it as
//     a 1.0 backend all the same.
//
// Storage is plain: hash maps under one std::shared_mutex, worker records
// kept for the backend's lifetime (1.0 has no way to delete one). An
// allocation failure part way through a mutation returns kInternal, which
// tells the host the backend cannot continue (backend.h): this backend does
// not roll back.
//
// Thread safety: Apply and a counting Match hold the lock exclusively; every
// other call shares it, so readers never wait for one another.
#include <algorithm>
#include <array>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kvindexer/backend.h"
#include "kvindexer/backend_kit.h"

#ifndef KVINDEXER_ABI_1_0_PINNED
#error \
    "build with -DKVINDEXER_ABI_1_0_PINNED=1 (minor 0) or =0 (MakeDescriptor)"
#endif

namespace {

using kvindexer::ActionView;
using kvindexer::ApplyBatchView;
using kvindexer::BackendCode;
using kvindexer::BackendStats;
using kvindexer::BackendStatus;
using kvindexer::BlockView;
using kvindexer::BlockVisitor;
using kvindexer::CacheSpec;
using kvindexer::HashSpan;
using kvindexer::IndexBackend;
using kvindexer::kActionClearAllAtTier;
using kvindexer::kActionReport;
using kvindexer::kActionRevoke;
using kvindexer::kMaxTier;
using kvindexer::Placement;
using kvindexer::StringView;
using kvindexer::WorkerView;
namespace kit = kvindexer::kit;

struct Block {
  uint32_t token_count = 0;
  std::vector<Placement> placements;  // ascending by (worker, tier)
};

struct Worker {
  std::string id;
  std::string address;
  uint32_t has_cache_spec = 0;
  CacheSpec cache_spec{};
  // The hashes held at each tier, for CLEAR_ALL_AT_TIER.
  std::array<std::unordered_set<int64_t>, kMaxTier + 1> holdings;
};

bool Before(const Placement& p, uint32_t worker, uint32_t tier) {
  return p.worker < worker || (p.worker == worker && p.tier < tier);
}

std::string Copy(StringView s) {
  return s.size == 0 ? std::string() : std::string(s.data, s.size);
}

class Abi10Backend final : public IndexBackend {
 public:
  BackendStatus Apply(const ApplyBatchView& batch) noexcept override {
    if (BackendStatus s = kit::CheckApplyBatch(batch); !kit::IsOk(s)) {
      return s;
    }
    std::unique_lock<std::shared_mutex> lock(mu_);
    try {
      const uint32_t worker = Upsert(batch);
      for (size_t a = 0; a < batch.action_count; ++a) {
        const ActionView& action = batch.actions[a];
        if (action.type == kActionReport) {
          Report(worker, action);
        } else if (action.type == kActionRevoke) {
          for (size_t i = 0; i < action.hashes.size; ++i) {
            Revoke(worker, action.tier, action.hashes.data[i]);
          }
        } else if (action.type == kActionClearAllAtTier) {
          std::unordered_set<int64_t> held;
          held.swap(workers_[worker].holdings[action.tier]);
          for (int64_t hash : held) Revoke(worker, action.tier, hash);
        }
      }
    } catch (const std::bad_alloc&) {
      return kit::ErrorStatus(BackendCode::kInternal,
                              "out of memory part way through a batch");
    }
    return kit::OkStatus();
  }

  BackendStatus Match(HashSpan hashes, bool count_as_hit,
                      BlockVisitor* visitor) noexcept override {
    if (BackendStatus s = kit::CheckVisit(hashes, visitor); !kit::IsOk(s)) {
      return s;
    }
    if (!count_as_hit) {
      std::shared_lock<std::shared_mutex> lock(mu_);
      return Visit(hashes, visitor);
    }
    std::unique_lock<std::shared_mutex> lock(mu_);
    try {
      for (size_t i = 0; i < hashes.size; ++i) {
        if (blocks_.count(hashes.data[i]) == 0) continue;
        uint64_t& hits = hits_[hashes.data[i]];
        if (hits != UINT64_MAX) ++hits;
      }
    } catch (const std::bad_alloc&) {
      return kit::ErrorStatus(BackendCode::kInternal,
                              "out of memory part way through counting hits");
    }
    return Visit(hashes, visitor);
  }

  BackendStatus PrefixScan(HashSpan hashes,
                           BlockVisitor* visitor) noexcept override {
    if (BackendStatus s = kit::CheckVisit(hashes, visitor); !kit::IsOk(s)) {
      return s;
    }
    std::shared_lock<std::shared_mutex> lock(mu_);
    return Visit(hashes, visitor);
  }

  BackendStatus HitCounts(HashSpan hashes, uint64_t* counts) noexcept override {
    if (BackendStatus s = kit::CheckHitCounts(hashes, counts); !kit::IsOk(s)) {
      return s;
    }
    std::shared_lock<std::shared_mutex> lock(mu_);
    for (size_t i = 0; i < hashes.size; ++i) {
      const auto it = hits_.find(hashes.data[i]);
      counts[i] = it == hits_.end() ? 0 : it->second;
    }
    return kit::OkStatus();
  }

  void GetStats(BackendStats* stats) noexcept override {
    std::shared_lock<std::shared_mutex> lock(mu_);
    kit::SetStat(stats, &BackendStats::blocks, blocks_.size());
    kit::SetStat(stats, &BackendStats::placements, placements_);
    kit::SetStat(stats, &BackendStats::workers, workers_.size());
    kit::SetStat(stats, &BackendStats::hit_counters, hits_.size());
    kit::SetStat(stats, &BackendStats::memory_bytes, MemoryBytes());
  }

 private:
  // REQUIRES: mu_ held exclusively (for all three below).
  // The worker's ordinal, its record created when first seen; address and
  // spec replaced by the batch's.
  uint32_t Upsert(const ApplyBatchView& batch) {
    const auto [it, inserted] = ordinals_.try_emplace(
        Copy(batch.worker_id), static_cast<uint32_t>(workers_.size()));
    if (inserted) {
      try {
        workers_.emplace_back();
      } catch (...) {
        ordinals_.erase(it);
        throw;
      }
      workers_.back().id = it->first;
    }
    Worker& worker = workers_[it->second];
    worker.address = Copy(batch.worker_address);
    worker.has_cache_spec = batch.has_cache_spec != 0 ? 1 : 0;
    worker.cache_spec =
        batch.has_cache_spec != 0 ? batch.cache_spec : CacheSpec{};
    return it->second;
  }

  void Report(uint32_t worker, const ActionView& action) {
    for (size_t i = 0; i < action.hashes.size; ++i) {
      const int64_t hash = action.hashes.data[i];
      const uint32_t mask =
          action.component_masks.size == 0 ? 0 : action.component_masks.data[i];
      const uint32_t size =
          action.block_sizes.size == 0 ? 0 : action.block_sizes.data[i];
      Block& block = blocks_[hash];
      if (size > 0) block.token_count = size;
      const auto at = std::partition_point(
          block.placements.begin(), block.placements.end(),
          [&](const Placement& p) { return Before(p, worker, action.tier); });
      if (at != block.placements.end() && at->worker == worker &&
          at->tier == action.tier) {
        at->mask = mask;
        continue;
      }
      workers_[worker].holdings[action.tier].insert(hash);
      block.placements.insert(at, Placement{worker, action.tier, mask});
      ++placements_;
    }
  }

  void Revoke(uint32_t worker, uint32_t tier, int64_t hash) {
    workers_[worker].holdings[tier].erase(hash);
    const auto block = blocks_.find(hash);
    if (block == blocks_.end()) return;
    std::vector<Placement>& placements = block->second.placements;
    const auto at = std::find_if(placements.begin(), placements.end(),
                                 [&](const Placement& p) {
                                   return p.worker == worker && p.tier == tier;
                                 });
    if (at == placements.end()) return;
    placements.erase(at);
    --placements_;
    if (placements.empty()) {
      blocks_.erase(block);
      hits_.erase(hash);
    }
  }

  // REQUIRES: mu_ held, shared or exclusively.
  BackendStatus Visit(HashSpan hashes, BlockVisitor* visitor) const {
    std::vector<bool> announced;
    try {
      announced.resize(workers_.size());
    } catch (const std::bad_alloc&) {
      return kit::ErrorStatus(BackendCode::kResourceExhausted,
                              "out of memory visiting %zu hashes", hashes.size);
    }
    for (size_t i = 0; i < hashes.size; ++i) {
      BlockView view{i, 0, nullptr, 0};
      const auto block = blocks_.find(hashes.data[i]);
      if (block != blocks_.end()) {
        for (const Placement& p : block->second.placements) {
          if (announced[p.worker]) continue;
          announced[p.worker] = true;
          const Worker& w = workers_[p.worker];
          visitor->OnWorker(
              WorkerView{p.worker, StringView{w.id.data(), w.id.size()},
                         StringView{w.address.data(), w.address.size()},
                         w.has_cache_spec, w.cache_spec});
        }
        view.token_count = block->second.token_count;
        view.placements = block->second.placements.data();
        view.placement_count = block->second.placements.size();
      }
      if (!visitor->OnBlock(view)) break;
    }
    return kit::OkStatus();
  }

  // An estimate of the heap in use: nodes and buckets of the hash tables,
  // the placement arrays, the holdings and the worker strings.
  uint64_t MemoryBytes() const {
    constexpr uint64_t kNode = 2 * sizeof(void*);  // next pointer, allocator
    uint64_t bytes =
        (blocks_.bucket_count() + hits_.bucket_count() +
         ordinals_.bucket_count()) *
            sizeof(void*) +
        blocks_.size() * (sizeof(std::pair<const int64_t, Block>) + kNode) +
        hits_.size() * (sizeof(std::pair<const int64_t, uint64_t>) + kNode) +
        placements_ * (sizeof(Placement) + sizeof(int64_t) + kNode +
                       sizeof(void*));  // + its holdings entry and bucket
    for (const Worker& w : workers_) {
      bytes += sizeof(Worker) + 2 * w.id.capacity() + w.address.capacity() +
               sizeof(std::pair<const std::string, uint32_t>) + kNode;
    }
    return bytes;
  }

  mutable std::shared_mutex mu_;
  std::unordered_map<int64_t, Block> blocks_;
  std::unordered_map<int64_t, uint64_t> hits_;
  std::vector<Worker> workers_;  // by ordinal; ordinals are never reused
  std::unordered_map<std::string, uint32_t> ordinals_;
  uint64_t placements_ = 0;
};

IndexBackend* Create(char* error, size_t error_size) noexcept {
  IndexBackend* backend = new (std::nothrow) Abi10Backend();
  if (backend == nullptr) {
    kit::WriteCreateError(error, error_size, "out of memory");
  }
  return backend;
}

#if KVINDEXER_ABI_1_0_PINNED
// The minor written out, as a plugin of ABI 1.0 states it.
const kvindexer::BackendDescriptor kDescriptor{
    kvindexer::kBackendAbiMajor,
    /*abi_minor=*/0,
    sizeof(kvindexer::BackendDescriptor),
    "abi_1_0_pinned",
    "1.0.0",
    KVINDEXER_KIT_BUILD_INFO,
    &Create,
    &kit::DestroyBackend};
#else
// This header's minor: what the source says when it is only rebuilt.
constexpr kvindexer::BackendDescriptor kDescriptor =
    kit::MakeDescriptor("abi_1_0_rebuilt", "1.0.0", KVINDEXER_KIT_BUILD_INFO,
                        &Create, &kit::DestroyBackend);
#endif

}  // namespace

KVINDEXER_DEFINE_BACKEND(kDescriptor)
