// The placement bound's part of the Indexer (core/placement_bound.h;
// docs/contract.md, "Limits > The placement bound").
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend_status.h"
#include "core/indexer.h"
#include "core/mutation_records.h"
#include "core/stream_log_fields.h"
#include "spdlog/spdlog.h"

namespace kvindexer {

void Indexer::RefreshTallyLocked(std::vector<std::string>* refreshed) {
  if (!limits_.placement_bound.enabled()) return;
  const std::vector<std::string>& changed = workers_.changed();
  for (; tally_counted_ < changed.size(); ++tally_counted_) {
    const std::string& id = changed[tally_counted_];
    const std::optional<TierCounts> counts =
        workers_.Contains(id) ? PlacementCounts(id) : std::nullopt;
    // Uncounted (no record, or the backend could not count): left out of
    // the plan, which then evicts less, never more.
    if (counts.has_value()) {
      tally_.Set(id, *counts);
    } else {
      tally_.Erase(id);
    }
    if (refreshed != nullptr) refreshed->push_back(id);
  }
}

void Indexer::EnforceBoundLocked(std::string_view also) {
  if (!limits_.placement_bound.enabled()) return;
  // Noted as changed, `also` is counted and checked as the others are.
  if (!also.empty()) workers_.Touch(also);
  std::vector<std::string> changed;
  RefreshTallyLocked(&changed);
  PlacementBound bound = limits_.placement_bound;
  // The event log brings the index-wide evictions (ApplyLoggedEvictions).
  if (bound.index_bound_from_log) bound.max_placements = 0;
  const std::vector<PlannedEviction> plan =
      PlanEvictions(tally_, changed, bound);
  for (const PlannedEviction& eviction : plan) {
    // A failure is logged and recorded as the backend's (ApplyToBackend):
    // the mutation that came before took effect all the same, and the
    // next one plans again.
    if (!EvictLocked(eviction.worker_id, eviction.tier, eviction.reason,
                     eviction.placements, Origin::kLive)
             .ok()) {
      break;
    }
  }
  RefreshTallyLocked(nullptr);
}

absl::Status Indexer::EvictLocked(std::string_view worker_id, uint32_t tier,
                                  EvictionReason reason, uint64_t placements,
                                  Origin origin) {
  const WorkerRecord* found = workers_.Find(worker_id);
  // Replayed, a record that is gone had nothing left to evict.
  if (found == nullptr) return absl::OkStatus();
  MutationLog* const log = LogFor(origin);
  uint64_t end = 0;
  if (absl::Status s = LogEviction(log, worker_id, tier,
                                   static_cast<uint32_t>(reason), &end);
      !s.ok()) {
    return s;
  }
  ActionView clear{};
  clear.type = kActionClearAllAtTier;
  clear.tier = tier;
  ApplyBatchView batch{};
  batch.worker_id = StringView{worker_id.data(), worker_id.size()};
  // The backend record keeps the host's address and spec, as every batch
  // the host composes does.
  batch.worker_address =
      StringView{found->address.data(), found->address.size()};
  batch.has_cache_spec = found->spec.has_value() ? 1 : 0;
  batch.cache_spec = found->spec.value_or(CacheSpec{});
  batch.actions = &clear;
  batch.action_count = 1;
  if (absl::Status s = ToAbslStatus(ApplyToBackend(batch)); !s.ok()) {
    TakeBack(log, end);
    return s;
  }
  WorkerRecord& record = *workers_.FindToChange(worker_id);
  record.evicted = true;
  if (origin != Origin::kLive) return absl::OkStatus();
  const auto r = static_cast<size_t>(reason);
  record.evicted_placements[r] += placements;
  evictions_[r].fetch_add(1, std::memory_order_relaxed);
  evicted_placements_[r].fetch_add(placements, std::memory_order_relaxed);
  spdlog::warn(
      "placement bound: evicted {} placements at tier {} ({}; {}={} {}={}) "
      "{}",
      placements, tier, EvictionReasonName(reason), kMaxPlacementsVar,
      limits_.placement_bound.max_placements, kMaxPlacementsPerWorkerVar,
      limits_.placement_bound.max_per_worker, StreamLogFields(worker_id));
  return absl::OkStatus();
}

void Indexer::EnforcePlacementBound(std::string_view worker_id) {
  PendingAck ack;
  {
    MutationLock lock(*this);
    EnforceBoundLocked(worker_id);
    ack = AckLocked(absl::OkStatus());
  }
  ack.Wait().IgnoreError();
}

IndexEvictionPlan Indexer::PlanIndexEvictions() {
  const uint64_t max_placements = limits_.placement_bound.max_placements;
  if (max_placements == 0) return {};
  MutationLock lock(*this);
  RefreshTallyLocked(nullptr);
  IndexEvictionPlan plan;
  plan.evictions = PlanEvictions(
      tally_, {}, PlacementBound{.max_placements = max_placements});
  // As PlanEvictions computes it: the bound over the streams holding any.
  plan.share = max_placements / std::max<uint64_t>(1, tally_.holders());
  return plan;
}

absl::Status Indexer::ApplyLoggedEvictions(
    const std::vector<PlannedEviction>& evictions, uint64_t share) {
  PendingAck ack;
  {
    MutationLock lock(*this);
    absl::Status status = CheckLogOpenLocked();
    for (size_t i = 0; status.ok() && i < evictions.size(); ++i) {
      const PlannedEviction& eviction = evictions[i];
      if (eviction.tier < kTierHbm || eviction.tier > kMaxTier ||
          !workers_.Contains(eviction.worker_id)) {
        continue;
      }
      // This index's own counts, which the tally may not hold when the
      // bound is off here. Without them the clear is applied unchecked, as
      // on every replica with such a backend.
      const std::optional<TierCounts> counts =
          PlacementCounts(eviction.worker_id);
      uint64_t placements = 0;
      if (counts.has_value()) {
        placements = (*counts)[eviction.tier];
        if (placements == 0 || (share != 0 && TotalOf(*counts) <= share)) {
          continue;
        }
      }
      status = EvictLocked(eviction.worker_id, eviction.tier, eviction.reason,
                           placements, Origin::kLive);
    }
    RefreshTallyLocked(nullptr);
    ack = AckLocked(std::move(status));
  }
  return ack.Wait();
}

bool Indexer::EvictedLocked(std::string_view worker_id) const {
  const WorkerRecord* record = workers_.Find(worker_id);
  return record != nullptr && record->evicted;
}

EvictionStats Indexer::eviction_stats() const {
  EvictionStats stats;
  stats.bound = limits_.placement_bound;
  for (size_t r = 0; r <= kMaxEvictionReason; ++r) {
    stats.tiers[r] = evictions_[r].load(std::memory_order_relaxed);
    stats.placements[r] =
        evicted_placements_[r].load(std::memory_order_relaxed);
  }
  return stats;
}

}  // namespace kvindexer
