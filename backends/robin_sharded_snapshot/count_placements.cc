// RobinShardedSnapshotBackend::CountPlacements (ABI 1.2): a worker's
// placements per tier, read from the writer-side counters every apply keeps
// (WorkerState::live). They are read under the writer mutex, so they are
// those of the copy the last writer published, never of a batch half
// applied; readers never take that mutex, so a count never holds up a query
// (it may wait for a writer in progress).
#include <cstdint>
#include <mutex>
#include <string_view>

#include "kvindexer/backend_kit.h"
#include "robin_backend.h"

namespace kvindexer::robin {

BackendStatus RobinShardedSnapshotBackend::CountPlacements(
    StringView worker_id, uint64_t* counts_by_tier,
    uint32_t* existed) noexcept {
  if (existed != nullptr) *existed = 0;
  if (BackendStatus s = kit::CheckCountPlacements(worker_id, counts_by_tier);
      s.code != BackendCode::kOk) {
    return s;
  }
  for (uint32_t tier = 0; tier <= kMaxTier; ++tier) counts_by_tier[tier] = 0;
  const std::string_view id(worker_id.data, worker_id.size);
  std::lock_guard<std::mutex> lock(writer_mu_);
  if (poisoned_) {
    // The counters may disagree with the live copy after a failed rollback.
    return kit::ErrorStatus(BackendCode::kInternal,
                            "a previous allocation failure left the writer "
                            "state inconsistent; counts are unavailable");
  }
  const auto found = registry_.find(id);
  if (found == registry_.end()) return kit::OkStatus();
  const WorkerState& state = *worker_states_[found->second];
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    counts_by_tier[tier] = state.live[tier];
  }
  if (existed != nullptr) *existed = 1;
  return kit::OkStatus();
}

}  // namespace kvindexer::robin
