#include "tests/support/model_backend.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "tests/support/make_backend_status.h"

namespace kvindexer::test_support {
namespace {

template <typename T>
std::vector<T> Copy(const T* data, size_t n) {
  return n == 0 ? std::vector<T>() : std::vector<T>(data, data + n);
}

}  // namespace

BackendStatus ModelBackend::Apply(const ApplyBatchView& batch) noexcept {
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
  applies.push_back(std::move(rec));
  if (fail_with) return *fail_with;
  for (size_t i = 0; i < batch.action_count; ++i) {
    const uint32_t type = batch.actions[i].type;
    if (type != kActionReport && type != kActionRevoke &&
        type != kActionClearAllAtTier) {
      return MakeBackendStatus(BackendCode::kInvalidArgument, "bad type");
    }
  }
  model_.Store(batch);
  return BackendOk();
}

BackendStatus ModelBackend::Match(HashSpan hashes, bool count_as_hit,
                                  BlockVisitor* visitor) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  matches.push_back(Copy(hashes.data, hashes.size));
  if (fail_with) return *fail_with;
  // Counted whether or not the visitor stops early (backend.h).
  if (count_as_hit) model_.CountHits(matches.back());
  Visit(hashes, visitor);
  return BackendOk();
}

BackendStatus ModelBackend::PrefixScan(HashSpan hashes,
                                       BlockVisitor* visitor) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  prefix_scans.push_back(Copy(hashes.data, hashes.size));
  blocks_visited = 0;
  if (fail_with) return *fail_with;
  blocks_visited = Visit(hashes, visitor);
  return BackendOk();
}

BackendStatus ModelBackend::HitCounts(HashSpan hashes,
                                      uint64_t* counts) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  hit_count_calls.push_back(Copy(hashes.data, hashes.size));
  if (fail_with) return *fail_with;
  for (size_t i = 0; i < hashes.size; ++i) {
    const auto it = model_.hits().find(hashes.data[i]);
    counts[i] = it == model_.hits().end() ? 0 : it->second;
  }
  return BackendOk();
}

void ModelBackend::GetStats(BackendStats* stats) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  stats->blocks = model_.block_count();
  stats->placements = model_.placement_count();
  stats->workers = model_.worker_count();
  stats->hit_counters = model_.hit_counter_count();
  stats->memory_bytes = 0;
}

size_t ModelBackend::Visit(HashSpan hashes, BlockVisitor* visitor) const {
  std::set<uint32_t> announced;
  std::vector<Placement> placements;
  for (size_t i = 0; i < hashes.size; ++i) {
    BlockView view{i, 0, nullptr, 0};
    placements.clear();
    const auto block = model_.blocks().find(hashes.data[i]);
    if (block != model_.blocks().end()) {
      for (const auto& [key, mask] : block->second.placements) {
        const auto& [id, tier] = key;
        const ReferenceModel::Worker& worker = model_.workers().at(id);
        placements.push_back(Placement{worker.ordinal, tier, mask});
        if (!announced.insert(worker.ordinal).second) continue;
        visitor->OnWorker(
            WorkerView{worker.ordinal, StringView{id.data(), id.size()},
                       StringView{worker.address.data(), worker.address.size()},
                       worker.spec.has_value() ? 1u : 0u,
                       worker.spec.value_or(CacheSpec{})});
      }
      std::sort(placements.begin(), placements.end(),
                [](const Placement& a, const Placement& b) {
                  return std::tie(a.worker, a.tier) <
                         std::tie(b.worker, b.tier);
                });
      view.token_count = block->second.token_count;
      view.placements = placements.data();
      view.placement_count = placements.size();
    }
    if (!visitor->OnBlock(view)) return i + 1;
  }
  return hashes.size;
}

BackendStatus ModelBackend::RemoveWorker(StringView worker_id,
                                         uint32_t* existed) noexcept {
  std::unique_lock<std::mutex> lock(mu_);
  if (existed != nullptr) *existed = 0;
  const std::string id(worker_id.data, worker_id.size);
  removed_workers.push_back(id);
  if (fail_with) return *fail_with;
  const auto worker = model_.workers().find(id);
  if (during_removal && worker != model_.workers().end()) {
    // The torn removal: HBM first, through a CLEAR that keeps the record as
    // it is, then the rest once the hook has looked.
    const ActionView clear{kActionClearAllAtTier, kTierHbm, {}, {}, {}};
    const ReferenceModel::Worker& w = worker->second;
    const ApplyBatchView batch{StringView{id.data(), id.size()},
                               StringView{w.address.data(), w.address.size()},
                               w.spec.has_value() ? 1u : 0u,
                               w.spec.value_or(CacheSpec{}),
                               &clear,
                               1};
    model_.Store(batch);
    lock.unlock();
    during_removal();
    lock.lock();
  }
  const bool removed = model_.RemoveWorker(id);
  if (existed != nullptr) *existed = removed ? 1 : 0;
  return BackendOk();
}

BackendStatus ModelBackend::CountPlacements(StringView worker_id,
                                            uint64_t* counts_by_tier,
                                            uint32_t* existed) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  if (existed != nullptr) *existed = 0;
  const std::string id(worker_id.data, worker_id.size);
  counted_workers.push_back(id);
  if (fail_with) return *fail_with;
  for (uint32_t tier = 0; tier <= kMaxTier; ++tier) counts_by_tier[tier] = 0;
  const auto worker = model_.workers().find(id);
  if (worker == model_.workers().end()) return BackendOk();
  for (const auto& [tier, hashes] : worker->second.holdings) {
    if (tier <= kMaxTier) counts_by_tier[tier] = hashes.size();
  }
  if (existed != nullptr) *existed = 1;
  return BackendOk();
}

BackendStatus ModelBackend::SetWriteMode(WriteMode mode) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  mode_changes.push_back({mode, applies.size(), removed_workers.size()});
  if (fail_with) return *fail_with;
  const bool bulk = mode == WriteMode::kBulkLoad;
  if (bulk && !bulk_load_ && model_.worker_count() != 0) {
    return BackendStatus{BackendCode::kFailedPrecondition,
                         "a bulk load needs a backend with no worker"};
  }
  bulk_load_ = bulk;
  return BackendOk();
}

}  // namespace kvindexer::test_support
