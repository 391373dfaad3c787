// StreamRecovery and the indexer's placement bound (docs/bridge-events.md,
// "When the indexer evicts"): an answer that says the stream's placements
// were evicted leads, with a snapshot endpoint, to a resync that installs a
// whole snapshot, which makes the stream exact again at the indexer.
#include "bridge/stream_recovery.h"

#include <algorithm>
#include <cstdint>

#include "spdlog/spdlog.h"

namespace kvindexer::bridge {

void StreamRecovery::CheckEvicted(bool install) {
  // Installs evicted again as they land (a worker over the bound) space the
  // resyncs out; one that lands whole brings the interval back.
  constexpr uint32_t kMaxFactor = 8;
  if (!io_.applier->TakeEvicted()) {
    if (install) eviction_resync_factor_ = 1;
    return;
  }
  if (install && last_eviction_resync_.has_value()) {
    eviction_resync_factor_ = std::min(kMaxFactor, eviction_resync_factor_ * 2);
  }
  ++io_.stats->evictions_reported;
  // A synchronisation in progress installs a whole snapshot anyway (or has
  // nothing to install from).
  if (need_sync_ || eviction_resync_pending_) return;
  const auto now = io_.clock->Now();
  if (publisher_mode_ != PublisherMode::kSnapshot) {
    if (auto n = eviction_throttle_.Allow(now)) {
      spdlog::warn(
          "the indexer evicted placements of this stream (its placement "
          "bound); without a snapshot endpoint the bridge cannot make it "
          "exact again, and the indexer under-reports the worker until a "
          "snapshot installs ({} similar suppressed)",
          *n);
    }
    return;
  }
  if (last_eviction_resync_.has_value() &&
      now - *last_eviction_resync_ <
          options_.eviction_resync_interval * eviction_resync_factor_) {
    return;
  }
  eviction_resync_pending_ = true;
}

void StreamRecovery::MaybeResyncAfterEviction() {
  if (!eviction_resync_pending_) return;
  eviction_resync_pending_ = false;
  last_eviction_resync_ = io_.clock->Now();
  ++io_.stats->eviction_resyncs;
  spdlog::warn(
      "the indexer evicted placements of this stream (its placement bound); "
      "resynchronising from a whole snapshot (at most once per {} ms)",
      (options_.eviction_resync_interval * eviction_resync_factor_).count());
  RequestSync();
  SyncStateStats();
}

}  // namespace kvindexer::bridge
