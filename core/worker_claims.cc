#include "core/worker_claims.h"

#include <algorithm>

#include "absl/hash/hash.h"
#include "common/doubling_throttle.h"
#include "common/log_text.h"
#include "core/stream_log_fields.h"
#include "fmt/format.h"

namespace kvindexer {
namespace {

std::string_view Excerpt(std::string_view s) {
  return s.substr(0, kClaimExcerptBytes);
}

uint64_t ContentFingerprint(const WorkerClaim& claim) {
  return absl::HashOf(claim.address, claim.epoch);
}

uint64_t PeerFingerprint(const WorkerClaim& claim) {
  return absl::HashOf(claim.peer);
}

}  // namespace

std::optional<ClaimConflict> WorkerClaims::Observe(const WorkerClaim& claim,
                                                   TimePoint now) {
  // Forget runs that left the window; they are oldest first.
  const auto fresh = std::find_if(
      runs_.begin(), runs_.end(),
      [&](const Run& r) { return now - r.last_seen <= kClaimWindow; });
  runs_.erase(runs_.begin(), fresh);

  const uint64_t peer = PeerFingerprint(claim);
  const uint64_t content = ContentFingerprint(claim);
  if (!runs_.empty() && runs_.back().peer_fingerprint == peer &&
      runs_.back().content_fingerprint == content) {
    // The same peer saying the same thing: the run goes on.
    runs_.back().last_seen = now;
    return std::nullopt;
  }

  // Newest first: a rival (another peer saying something else) met before
  // this peer's latest run is an interleaving, a conflict.
  const Run* rival = nullptr;
  bool returned = false;
  for (auto it = runs_.rbegin(); it != runs_.rend(); ++it) {
    if (it->peer_fingerprint == peer) {
      returned = rival != nullptr;
      break;
    }
    if (rival == nullptr && it->content_fingerprint != content) rival = &*it;
  }
  std::optional<ClaimConflict> conflict;
  if (returned) {
    ++conflicts_;
    conflict.emplace();
    conflict->total = conflicts_;
    conflict->log = IsPowerOfTwo(conflicts_);
    conflict->other_peer = rival->peer;
    conflict->other_address = rival->address;
    conflict->other_epoch = rival->epoch;
  }

  if (runs_.size() == kClaimHistory) runs_.erase(runs_.begin());
  if (runs_.capacity() == 0) runs_.reserve(kClaimHistory);
  runs_.push_back(Run{peer, content, now, std::string(Excerpt(claim.peer)),
                      std::string(Excerpt(claim.address)),
                      std::string(Excerpt(claim.epoch))});
  return conflict;
}

std::string ClaimConflictLine(std::string_view worker_id,
                              const WorkerClaim& claim,
                              const ClaimConflict& conflict) {
  return fmt::format(
      "{} {} peer={} address={} epoch={} other_peer={} "
      "other_address={} other_epoch={} conflicts_total={}",
      kClaimConflictLogMessage,
      StreamLogFields(worker_id, LogQuotes::kNone, kClaimExcerptBytes),
      LogText(claim.peer, kClaimExcerptBytes),
      LogText(claim.address, kClaimExcerptBytes),
      LogText(claim.epoch, kClaimExcerptBytes), LogText(conflict.other_peer),
      LogText(conflict.other_address), LogText(conflict.other_epoch),
      conflict.total);
}

}  // namespace kvindexer
