#include "core/worker_batches.h"

#include "absl/container/flat_hash_map.h"

namespace kvindexer {
namespace {

namespace v1 = ::kv_indexer::v1;

StringView ViewOf(std::string_view s) { return StringView{s.data(), s.size()}; }

ActionView ClearAt(uint32_t tier) {
  ActionView clear{};
  clear.type = kActionClearAllAtTier;
  clear.tier = tier;
  return clear;
}

void SetWorker(std::string_view worker_id, std::string_view address,
               const std::optional<CacheSpec>& spec, ApplyBatchView* view) {
  view->worker_id = ViewOf(worker_id);
  view->worker_address = ViewOf(address);
  view->has_cache_spec = spec.has_value() ? 1 : 0;
  view->cache_spec = spec.value_or(CacheSpec{});
}

}  // namespace

CacheSpec CacheSpecOf(const v1::WorkerCacheSpec& spec) {
  return CacheSpec{spec.version(),           spec.components(),
                   spec.swa_window_tokens(), spec.full_tier_mask(),
                   spec.swa_tier_mask(),     spec.mamba_tier_mask()};
}

v1::WorkerCacheSpec WireCacheSpecOf(const CacheSpec& spec) {
  v1::WorkerCacheSpec wire;
  wire.set_version(spec.version);
  wire.set_components(spec.components);
  wire.set_swa_window_tokens(spec.swa_window_tokens);
  wire.set_full_tier_mask(spec.full_tier_mask);
  wire.set_swa_tier_mask(spec.swa_tier_mask);
  wire.set_mamba_tier_mask(spec.mamba_tier_mask);
  return wire;
}

RecordBatch::RecordBatch(std::string_view worker_id, const WorkerRecord& record,
                         Actions actions) {
  SetWorker(worker_id, record.address, record.spec, &view_);
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    clears_[tier - kTierHbm] = ClearAt(tier);
  }
  if (actions == Actions::kClearAllTiers) {
    view_.actions = clears_;
    view_.action_count = kMaxTier;
  }
}

SnapshotBatch::SnapshotBatch(const v1::ReplaceExternalKvSnapshotRequest& req,
                             std::string_view backend_id) {
  // Pass 1: where, in request order, each hash last occurs at each tier.
  // Only those occurrences count (keep-last, as a REPORT).
  absl::flat_hash_map<int64_t, size_t> last[kMaxTier + 1];
  size_t position = 0;
  for (const v1::TierHashes& entry : req.hashes_by_tier()) {
    auto& last_at_tier = last[static_cast<uint32_t>(entry.tier())];
    for (const int64_t hash : entry.hashes()) {
      last_at_tier.insert_or_assign(hash, position++);
    }
  }
  int filled_tiers = 0;
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    if (!last[tier].empty()) ++filled_tiers;
  }

  // Pass 2: the counted occurrences, in request order. With more than one
  // tier a hash may count at several; its token count is then the last
  // positive size among them, which every one of its REPORT entries carries
  // (0 never erases, so equal sizes make the tiers' order irrelevant).
  absl::flat_hash_map<int64_t, uint32_t> final_size;
  position = 0;
  for (const v1::TierHashes& entry : req.hashes_by_tier()) {
    const uint32_t tier = static_cast<uint32_t>(entry.tier());
    TierReport& report = reports_[tier];
    const bool has_masks = entry.component_masks_size() != 0;
    const bool has_sizes = entry.block_sizes_size() != 0;
    for (int i = 0; i < entry.hashes_size(); ++i, ++position) {
      const int64_t hash = entry.hashes(i);
      if (last[tier].find(hash)->second != position) continue;
      const uint32_t size = has_sizes ? entry.block_sizes(i) : 0;
      report.hashes.push_back(hash);
      report.masks.push_back(has_masks ? entry.component_masks(i) : 0);
      report.sizes.push_back(size);
      if (filled_tiers > 1 && size > 0) final_size.insert_or_assign(hash, size);
    }
  }
  if (filled_tiers > 1) {
    for (TierReport& report : reports_) {
      for (size_t i = 0; i < report.hashes.size(); ++i) {
        auto it = final_size.find(report.hashes[i]);
        report.sizes[i] = it == final_size.end() ? 0 : it->second;
      }
    }
  }

  SetWorker(backend_id, req.worker_address(),
            req.has_cache_spec()
                ? std::optional<CacheSpec>(CacheSpecOf(req.cache_spec()))
                : std::nullopt,
            &view_);
  actions_.reserve(2 * kMaxTier);
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    actions_.push_back(ClearAt(tier));
  }
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    const TierReport& report = reports_[tier];
    if (report.hashes.empty()) continue;
    ActionView action{};
    action.type = kActionReport;
    action.tier = tier;
    action.hashes = HashSpan{report.hashes.data(), report.hashes.size()};
    action.component_masks = U32Span{report.masks.data(), report.masks.size()};
    action.block_sizes = U32Span{report.sizes.data(), report.sizes.size()};
    actions_.push_back(action);
  }
  view_.actions = actions_.data();
  view_.action_count = actions_.size();
}

StagedCommitBatch::StagedCommitBatch(
    const state::v1::StagedSnapshotCommit& commit,
    std::string_view backend_id) {
  SetWorker(backend_id, commit.worker_address(),
            commit.has_cache_spec()
                ? std::optional<CacheSpec>(CacheSpecOf(commit.cache_spec()))
                : std::nullopt,
            &view_);
  actions_.reserve(kMaxTier +
                   static_cast<size_t>(commit.hashes_by_tier_size()));
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    actions_.push_back(ClearAt(tier));
  }
  for (const v1::TierHashes& entry : commit.hashes_by_tier()) {
    if (entry.hashes_size() == 0) continue;
    ActionView action{};
    action.type = kActionReport;
    action.tier = static_cast<uint32_t>(entry.tier());
    action.hashes = HashSpan{entry.hashes().data(),
                             static_cast<size_t>(entry.hashes_size())};
    action.component_masks =
        U32Span{entry.component_masks().data(),
                static_cast<size_t>(entry.component_masks_size())};
    action.block_sizes = U32Span{entry.block_sizes().data(),
                                 static_cast<size_t>(entry.block_sizes_size())};
    actions_.push_back(action);
  }
  view_.actions = actions_.data();
  view_.action_count = actions_.size();
}

}  // namespace kvindexer
