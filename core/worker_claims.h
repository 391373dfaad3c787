// WorkerClaims: the recent claims bridges made on one worker id, to detect two
// bridges feeding the same worker_id with different addresses or epochs
// (docs/contract.md, "Limits > Bounds > Duplicate claims"). The server still
// applies what each sends; detection only makes the fight visible in the log.
//
// A claim is what an apply or a Replace says about its worker: the gRPC peer
// that sent it, its worker_address and its worker_epoch. The history holds
// runs: consecutive claims from one peer that say the same thing are one run,
// stamped with the time of its latest claim. At most kClaimHistory runs are
// kept, oldest first, and runs older than kClaimWindow are forgotten.
//
// A claim from peer P conflicts when, since P's latest run and within the
// window, another peer claimed the worker with a different address or epoch:
// P, then Q saying something else, then P again. So a single change (a worker
// restarted on a new address or epoch, behind a new bridge connection: P then
// Q) never conflicts, nor does a peer that changes its own claim, nor peers
// that agree. Two live bridges alternate and conflict on every switch back.
//
// Memory per worker: kClaimHistory runs, each with fingerprints of its peer
// and of the full address and epoch (compared) and the three cut to
// kClaimExcerptBytes (for the log line), whatever the request sizes. The
// object lives in the worker's record (core/worker_sequence_table.h) and is
// deleted with it.
//
// Time is passed in by the caller, so tests choose it.
//
// Thread safety: none; the Indexer uses it under its mutation mutex.
#ifndef KVINDEXER_CORE_WORKER_CLAIMS_H_
#define KVINDEXER_CORE_WORKER_CLAIMS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvindexer {

// Runs kept per worker: enough to see P, Q and P again, with one spare for a
// bridge that reconnected under a new peer meanwhile.
inline constexpr size_t kClaimHistory = 3;
// Runs older than this are forgotten. Longer than the pause between a
// bridge's applies while its worker is idle but heartbeating, short enough
// that a bridge replaced long ago no longer counts.
inline constexpr std::chrono::minutes kClaimWindow{5};
// Bytes of peer, address and epoch kept for the log line.
inline constexpr size_t kClaimExcerptBytes = 64;

inline constexpr std::string_view kClaimConflictLogMessage =
    "worker claimed by two bridges with different addresses or epochs";

// One claim. Views; nothing is kept beyond Observe.
struct WorkerClaim {
  std::string_view peer;
  std::string_view address;
  std::string_view epoch;
};

// A conflict Observe found.
struct ClaimConflict {
  // The worker's conflicts so far, this one included.
  uint64_t total = 0;
  // Whether to log this one: `total` is a power of two
  // (common/doubling_throttle.h), so a lasting fight grows the log only
  // logarithmically, per worker.
  bool log = false;
  // The other peer's run, cut to kClaimExcerptBytes.
  std::string other_peer;
  std::string other_address;
  std::string other_epoch;
};

class WorkerClaims {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // Records `claim`, made at `now`, and returns the conflict it makes, if
  // any. REQUIRES: `now` never goes back between calls.
  std::optional<ClaimConflict> Observe(const WorkerClaim& claim, TimePoint now);

  uint64_t conflicts_total() const { return conflicts_; }
  // Runs currently kept (for tests).
  size_t runs() const { return runs_.size(); }

 private:
  struct Run {
    uint64_t peer_fingerprint = 0;
    uint64_t content_fingerprint = 0;  // address and epoch
    TimePoint last_seen{};
    std::string peer;
    std::string address;
    std::string epoch;
  };

  std::vector<Run> runs_;  // oldest first, at most kClaimHistory
  uint64_t conflicts_ = 0;
};

// The WARN line for `conflict`, made by `claim` on `worker_id`:
// "<kClaimConflictLogMessage> worker=... peer=... address=... epoch=...
// other_peer=... other_address=... other_epoch=... conflicts_total=N", every
// value cut to kClaimExcerptBytes and escaped (common/log_text.h).
std::string ClaimConflictLine(std::string_view worker_id,
                              const WorkerClaim& claim,
                              const ClaimConflict& conflict);

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_WORKER_CLAIMS_H_
