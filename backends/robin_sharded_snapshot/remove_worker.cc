// RobinShardedSnapshotBackend::RemoveWorker (ABI 1.1; DESIGN.md, "Workers"):
// one writer step that revokes every placement of the worker at every tier in
// the non-live copy (as CLEAR_ALL_AT_TIER does: through its holdings logs,
// and one scan of the index for all its scanned tiers),
// takes its record out of that copy's worker table and publishes both at
// once. Its ordinal is freed only after the publish, and the next writer
// finishes the other copy's catch-up before it may hand the ordinal out
// again, so no snapshot ever names a new worker with an ordinal its
// placements still give to the old one. The hash tables the removal left
// sparse are then rebuilt smaller (shrink_after_removal.cc).
#include "robin_backend.h"

#include <array>
#include <cstdint>
#include <mutex>
#include <new>
#include <string_view>

#include "kvindexer/backend_kit.h"
#include "vector_growth.h"
#include "worker_table.h"

namespace kvindexer::robin {
namespace {

using kit::ErrorStatus;
using kit::OkStatus;

}  // namespace

BackendStatus RobinShardedSnapshotBackend::RemoveWorker(
    StringView worker_id, uint32_t* existed) noexcept {
  if (existed != nullptr) *existed = 0;
  if (worker_id.size != 0 && worker_id.data == nullptr) {
    return ErrorStatus(BackendCode::kInvalidArgument,
                       "worker_id has %zu bytes but no data", worker_id.size);
  }
  const std::string_view id(worker_id.data, worker_id.size);
  std::lock_guard<std::mutex> lock(writer_mu_);
  if (BackendStatus ready = WriterReady(); ready.code != BackendCode::kOk) {
    return ready;
  }
  try {
    return RemoveWorkerLocked(id, existed);
  } catch (const std::bad_alloc&) {
    return ErrorStatus(BackendCode::kResourceExhausted,
                       "out of memory removing the worker");
  }
}

BackendStatus RobinShardedSnapshotBackend::RemoveWorkerLocked(
    std::string_view id, uint32_t* existed) {
  const auto found = registry_.find(id);
  if (found == registry_.end()) return OkStatus();  // nothing to remove
  const uint32_t ordinal = found->second;
  WorkerState& state = *worker_states_[ordinal];
  SnapshotCopy& back = copies_[1 - gate_.live()];

  // Room for the commit below, so that it cannot fail.
  ReserveOneMore(worker_changes_);
  ReserveOneMore(retired_records_);
  ordinals_.ReserveRelease();

  // Pass one: every placement goes from the non-live copy. The logs and the
  // scan find every live placement (and maybe stale entries, which revoke
  // nothing).
  const std::array<uint64_t, kMaxTier + 1> saved_live = state.live;
  const ShardSizes sizes_before = SizesOfShards();
  const size_t touched_capacity = touched_.capacity();
  touched_.clear();
  counted_.clear();
  worker_changes_.clear();
  const auto roll_back = [&] {
    if (bulk_) {
      poisoned_ = true;  // nothing to roll back from (backend.h)
    } else {
      try {
        RollBack(state, saved_live);
      } catch (const std::bad_alloc&) {
        poisoned_ = true;
      }
    }
    UpdateMemory();
  };
  try {
    // Bit t for each tier t from kTierHbm to kMaxTier.
    constexpr uint32_t kEveryTier = (2u << kMaxTier) - (1u << kTierHbm);
    ClearTiers(ordinal, kEveryTier, state, back);
  } catch (const std::bad_alloc&) {
    roll_back();
    if (poisoned_) {
      // INTERNAL from a mutation: this backend cannot continue
      // (include/kvindexer/backend.h, BackendCode).
      return ErrorStatus(BackendCode::kInternal,
                         "out of memory removing the worker, and again undoing "
                         "it: the writer copy is inconsistent; recreate the "
                         "backend");
    }
    return ErrorStatus(BackendCode::kResourceExhausted,
                       "out of memory removing the worker; nothing changed");
  }
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    if (state.live[tier] != 0) {
      // A placement neither its log nor a scan found: freeing the ordinal
      // now would give that placement to the next worker. Never expected.
      roll_back();
      return ErrorStatus(BackendCode::kInternal,
                         "worker holds %llu placements at tier %u that its "
                         "clear did not find; not removed",
                         static_cast<unsigned long long>(state.live[tier]),
                         tier);
    }
  }

  // The record leaves the non-live copy's table in the same publish.
  back.workers.Set(ordinal, nullptr);
  worker_changes_.push_back(ordinal);
  worker_bytes_ -= RecordBytes(*records_[ordinal]);
  retired_records_.push_back(std::move(records_[ordinal]));
  Publish();

  // Writer-side state, which no reader sees. The ordinal is free from here
  // on; if the catch-up above was left pending, the next writer completes
  // it before it can take the ordinal again.
  holdings_bytes_ -= HoldingsBytes(state);
  worker_states_[ordinal].reset();
  worker_bytes_ -= StringHeapBytes(found->first);
  registry_.erase(found);
  ordinals_.Release(ordinal);
  if (!pending_sync_) {
    // Before the merges: a shard they empty keeps the buckets its policy
    // wants, and a shard the removal emptied should not. (Not during a bulk
    // load: fitting publishes.)
    if (!bulk_) FitEmptiedShards(sizes_before, touched_capacity);
    MergeLargeDeltas();
  }
  UpdateMemory();
  if (existed != nullptr) *existed = 1;
  return OkStatus();
}

}  // namespace kvindexer::robin
