// StreamRecovery when resynchronisation keeps failing (docs/bridge-events.md,
// "Recovery > A resync that cannot finish"): the server still holds the
// placement of the last synchronised state, which the worker may have
// changed since (the reason a resync was needed). After
// KV_INDEXER_RESYNC_CLEAR_AFTER_MS of failed attempts that placement is
// cleared, so that the index under-reports the worker instead of routing to
// blocks it dropped.
#include <chrono>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "bridge/recovery_requests.h"
#include "bridge/stream_recovery.h"
#include "spdlog/spdlog.h"

namespace kvindexer::bridge {

std::optional<RecoveryClock::Clock::time_point> StreamRecovery::StaleClearDue()
    const {
  if (stale_cleared_ || !need_sync_ || !sync_attempt_failed_) {
    return std::nullopt;
  }
  return unsynced_since_ + options_.resync_clear_after;
}

std::chrono::milliseconds StreamRecovery::TimeUntil(
    RecoveryClock::Clock::time_point when) const {
  const auto now = io_.clock->Now();
  if (when <= now) return std::chrono::milliseconds(0);
  return std::chrono::ceil<std::chrono::milliseconds>(when - now);
}

bool StreamRecovery::MaybeClearStale() {
  const auto due = StaleClearDue();
  if (!due || io_.clock->Now() < *due || !fatal_.ok() ||
      io_.clock->Stopping()) {
    return false;
  }
  const auto unsynced = std::chrono::duration_cast<std::chrono::milliseconds>(
      io_.clock->Now() - unsynced_since_);
  const DegradedBy by{
      "resync_failing",
      absl::StrCat("resynchronisation has failed for ", unsynced.count(),
                   " ms; the worker's placement is cleared until it "
                   "succeeds")};
  spdlog::warn("{} (KV_INDEXER_RESYNC_CLEAR_AFTER_MS={})", by.message,
               options_.resync_clear_after.count());
  const uint64_t applied = watermarks_.applied().value_or(0);
  if (gated()) {
    // An empty install under an epoch no publisher uses: the record and its
    // address stay, its placement goes, and no later synchronisation (of
    // this process or of a restarted bridge) can resume from the
    // checkpoint it leaves: a probe under the worker's real epoch finds
    // none there.
    if (!Install(std::string(kResyncFailingEpoch), applied, {}, {}, by)) {
      return true;
    }
  } else {
    // Every tier, whatever KV_INDEXER_CLEAR_TIERS says: the placement may
    // be stale at any of them.
    static constexpr Tier kAllTiers[] = {Tier::kHbm, Tier::kDram, Tier::kSsd};
    if (!SendSeedEra(ClearRequests(header_, applied, kAllTiers))) {
      return true;
    }
    Degrade(by);
  }
  stale_cleared_ = true;
  ++io_.stats->stale_clears;
  SyncStateStats();
  return true;
}

}  // namespace kvindexer::bridge
