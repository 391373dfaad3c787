#include "durable/image_backend.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "kvindexer/backend_kit.h"

namespace kvindexer::durable {

// Placements live with their worker, one hash -> mask map per tier: a CLEAR
// or a removal walks only that worker's holdings, and ForEachTier reads
// them in the order it visits. Blocks are shared between workers, so each
// keeps its token count and how many placements it has in a map of its
// own; a block is deleted with its last placement, and with it its count.
// That is two 16-byte slots per placement when blocks are not shared, the
// least that answers CLEAR, REVOKE and the export without a scan.
struct ImageBackend::State {
  struct Block {
    uint32_t token_count = 0;
    uint32_t placements = 0;
  };
  using Holdings = absl::flat_hash_map<int64_t, uint32_t>;  // hash -> mask
  struct Worker {
    Holdings tiers[kMaxTier];  // tiers[tier - kTierHbm]
  };

  absl::flat_hash_map<int64_t, Block> blocks;
  absl::flat_hash_map<std::string, Worker> workers;
  uint64_t placements = 0;
  // RestrictTo's: the blocks allowed (null: all), whether a batch asked
  // for another, and each worker's cleared tiers (bit `tier`).
  const absl::flat_hash_set<int64_t>* allowed = nullptr;
  bool touched_outside = false;
  absl::flat_hash_map<std::string, uint32_t> cleared;

  // Whether every REPORT and REVOKE of `batch` stays in `allowed`.
  bool Allowed(const ApplyBatchView& batch) const {
    if (allowed == nullptr) return true;
    for (size_t a = 0; a < batch.action_count; ++a) {
      const ActionView& action = batch.actions[a];
      if (action.type == kActionClearAllAtTier) continue;
      for (size_t i = 0; i < action.hashes.size; ++i) {
        if (!allowed->contains(action.hashes.data[i])) return false;
      }
    }
    return true;
  }
  void NoteCleared(absl::string_view id, uint32_t tiers) {
    if (allowed != nullptr) cleared[id] |= tiers;
  }
  std::function<void(std::string_view, uint64_t*)> holding_sizes;

  Worker& Add(absl::string_view id) {
    Worker& worker = workers.emplace(std::string(id), Worker{}).first->second;
    if (holding_sizes) {
      uint64_t counts[kMaxTier + 1] = {};
      holding_sizes(std::string_view(id.data(), id.size()), counts);
      for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
        const uint64_t n = counts[tier];
        if (n > 0) worker.tiers[tier - kTierHbm].reserve(n + n / 8);
      }
    }
    return worker;
  }

  void Report(Worker& worker, uint32_t tier, int64_t hash, uint32_t mask,
              uint32_t size) {
    const auto [it, placed] =
        worker.tiers[tier - kTierHbm].insert_or_assign(hash, mask);
    (void)it;
    Block& block = blocks[hash];
    if (placed) {
      ++block.placements;
      ++placements;
    }
    if (size > 0) block.token_count = size;
  }

  // One placement of `hash` is gone.
  void Release(int64_t hash) {
    const auto it = blocks.find(hash);
    --placements;
    if (--it->second.placements == 0) blocks.erase(it);
  }

  void Revoke(Worker& worker, uint32_t tier, int64_t hash) {
    if (worker.tiers[tier - kTierHbm].erase(hash) != 0) Release(hash);
  }

  void Clear(Worker& worker, uint32_t tier) {
    Holdings& holdings = worker.tiers[tier - kTierHbm];
    for (const auto& [hash, mask] : holdings) Release(hash);
    // Swapped out rather than cleared, so that the memory comes back.
    Holdings().swap(holdings);
  }

  uint64_t MemoryBytes() const {
    // Slots plus one control byte each; strings and worker entries on top.
    uint64_t bytes =
        blocks.capacity() * (sizeof(std::pair<int64_t, Block>) + 1);
    for (const auto& [id, worker] : workers) {
      bytes += sizeof(std::pair<std::string, Worker>) + 1 + id.capacity();
      for (const Holdings& holdings : worker.tiers) {
        bytes +=
            holdings.capacity() * (sizeof(std::pair<int64_t, uint32_t>) + 1);
      }
    }
    return bytes;
  }
};

ImageBackend::ImageBackend() : state_(std::make_unique<State>()) {}

ImageBackend::~ImageBackend() = default;

BackendStatus ImageBackend::Apply(const ApplyBatchView& batch) noexcept {
  // Checked whole before anything changes: a refused batch changes nothing.
  if (BackendStatus s = kit::CheckApplyBatch(batch); !kit::IsOk(s)) return s;
  if (!state_->Allowed(batch)) {
    state_->touched_outside = true;
    return kit::ErrorStatus(BackendCode::kFailedPrecondition,
                            "the batch touches a block outside the image");
  }
  const absl::string_view id(batch.worker_id.data, batch.worker_id.size);
  const auto it = state_->workers.find(id);
  State::Worker& worker =
      it != state_->workers.end() ? it->second : state_->Add(id);
  // The address and spec are not kept: a checkpoint takes them from the
  // host's worker records.
  for (size_t a = 0; a < batch.action_count; ++a) {
    const ActionView& action = batch.actions[a];
    switch (action.type) {
      case kActionReport:
        for (size_t i = 0; i < action.hashes.size; ++i) {
          state_->Report(
              worker, action.tier, action.hashes.data[i],
              action.component_masks.size == 0 ? 0
                                               : action.component_masks.data[i],
              action.block_sizes.size == 0 ? 0 : action.block_sizes.data[i]);
        }
        break;
      case kActionRevoke:
        for (size_t i = 0; i < action.hashes.size; ++i) {
          state_->Revoke(worker, action.tier, action.hashes.data[i]);
        }
        break;
      default:  // kActionClearAllAtTier; CheckApplyBatch allows no other
        state_->Clear(worker, action.tier);
        state_->NoteCleared(id, uint32_t{1} << action.tier);
        break;
    }
  }
  return kit::OkStatus();
}

void ImageBackend::ReserveBlocks(size_t blocks) {
  state_->blocks.reserve(blocks);
}

void ImageBackend::RestrictTo(const absl::flat_hash_set<int64_t>* blocks) {
  state_->allowed = blocks;
}

bool ImageBackend::touched_outside() const { return state_->touched_outside; }

bool ImageBackend::Cleared(std::string_view worker_id, uint32_t tier) const {
  const auto it = state_->cleared.find(
      absl::string_view(worker_id.data(), worker_id.size()));
  return it != state_->cleared.end() && (it->second >> tier & 1) != 0;
}

void ImageBackend::SetHoldingSizes(
    std::function<void(std::string_view worker_id, uint64_t* counts_by_tier)>
        sizes) {
  state_->holding_sizes = std::move(sizes);
}

BackendStatus ImageBackend::Match(HashSpan, bool, BlockVisitor*) noexcept {
  return kit::ErrorStatus(BackendCode::kInternal,
                          "ImageBackend answers no queries");
}

BackendStatus ImageBackend::PrefixScan(HashSpan, BlockVisitor*) noexcept {
  return kit::ErrorStatus(BackendCode::kInternal,
                          "ImageBackend answers no queries");
}

BackendStatus ImageBackend::HitCounts(HashSpan, uint64_t*) noexcept {
  return kit::ErrorStatus(BackendCode::kInternal,
                          "ImageBackend answers no queries");
}

BackendStatus ImageBackend::CountPlacements(StringView worker_id,
                                            uint64_t* counts_by_tier,
                                            uint32_t* existed) noexcept {
  if (existed != nullptr) *existed = 0;
  if (BackendStatus s = kit::CheckCountPlacements(worker_id, counts_by_tier);
      s.code != BackendCode::kOk) {
    return s;
  }
  for (uint32_t tier = 0; tier <= kMaxTier; ++tier) counts_by_tier[tier] = 0;
  const auto it =
      state_->workers.find(absl::string_view(worker_id.data, worker_id.size));
  if (it == state_->workers.end()) return kit::OkStatus();
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    counts_by_tier[tier] = it->second.tiers[tier - kTierHbm].size();
  }
  if (existed != nullptr) *existed = 1;
  return kit::OkStatus();
}

void ImageBackend::GetStats(BackendStats* stats) noexcept {
  kit::SetStat(stats, &BackendStats::blocks, state_->blocks.size());
  kit::SetStat(stats, &BackendStats::placements, state_->placements);
  kit::SetStat(stats, &BackendStats::workers, state_->workers.size());
  kit::SetStat(stats, &BackendStats::hit_counters, 0);
  kit::SetStat(stats, &BackendStats::memory_bytes, state_->MemoryBytes());
}

BackendStatus ImageBackend::RemoveWorker(StringView worker_id,
                                         uint32_t* existed) noexcept {
  if (existed != nullptr) *existed = 0;
  if (BackendStatus s = kit::CheckRemoveWorker(worker_id); !kit::IsOk(s)) {
    return s;
  }
  const absl::string_view id(worker_id.data, worker_id.size);
  // Noted even for a worker the image does not hold: its placements in the
  // previous checkpoint go all the same.
  state_->NoteCleared(id, ~uint32_t{0});
  const auto it = state_->workers.find(id);
  if (it == state_->workers.end()) return kit::OkStatus();
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    state_->Clear(it->second, tier);
  }
  state_->workers.erase(it);
  if (existed != nullptr) *existed = 1;
  return kit::OkStatus();
}

void ImageBackend::ForEachTier(
    size_t max_hashes, absl::FunctionRef<void(const TierView&)> visit) const {
  // Worker id, tier, hash ascending: the same state always gives the same
  // checkpoint.
  std::vector<const std::pair<const std::string, State::Worker>*> workers;
  workers.reserve(state_->workers.size());
  for (const auto& entry : state_->workers) workers.push_back(&entry);
  std::sort(workers.begin(), workers.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });

  // Only the hashes are copied for sorting (8 bytes a placement, for the
  // largest holding at most); masks and sizes are looked up per part.
  std::vector<int64_t> order;
  std::vector<uint32_t> masks;
  std::vector<uint32_t> sizes;
  for (const auto* worker : workers) {
    for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
      const State::Holdings& holdings = worker->second.tiers[tier - kTierHbm];
      if (holdings.empty()) continue;
      order.clear();
      order.reserve(holdings.size());
      for (const auto& [hash, mask] : holdings) order.push_back(hash);
      std::sort(order.begin(), order.end());
      // 0 puts a whole holding in one part.
      const size_t part = max_hashes == 0 ? order.size() : max_hashes;
      for (size_t start = 0; start < order.size(); start += part) {
        const size_t count = std::min(order.size() - start, part);
        masks.clear();
        sizes.clear();
        for (size_t i = start; i < start + count; ++i) {
          masks.push_back(holdings.find(order[i])->second);
          sizes.push_back(state_->blocks.find(order[i])->second.token_count);
        }
        visit(TierView{worker->first, tier,
                       HashSpan{order.data() + start, count},
                       U32Span{masks.data(), masks.size()},
                       U32Span{sizes.data(), sizes.size()}});
      }
    }
  }
}

}  // namespace kvindexer::durable
