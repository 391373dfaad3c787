// LivenessTable: which workers heartbeat, until when, and the census rule
// that decides which of them a sweep clears (docs/contract.md, "Recovery >
// Worker liveness and removal").
//
// A heartbeat marks its worker with deadline = arrival + TTL, and the marker
// remembers that TTL: the restart-safe state keeps markers with their last
// TTL and re-arms them at start-up (docs/durability.md). The marker does
// not expire by itself: a sweep past the deadline either clears the worker
// (and the Indexer then calls Unmark) or, under the census rule, leaves it.
// Marks are kept whether or not the worker has a record; the census counts
// only marked workers that have one, and a sweep forgets an expired marker of
// a worker without a record.
//
// The table knows nothing of placements or of the worker table: PlanSweep
// asks the caller which workers have a record. It holds the liveness
// counters as well (LivenessStats).
//
// Thread safety: the marker methods need external serialisation (the Indexer
// calls them under its mutation mutex); stats() may be called concurrently
// with anything.
#ifndef KVINDEXER_CORE_LIVENESS_TABLE_H_
#define KVINDEXER_CORE_LIVENESS_TABLE_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "common/clock.h"

namespace kvindexer {

// Liveness counters since start, for the stats of later issues. Plain
// values: a copy taken at one moment.
struct LivenessStats {
  uint64_t heartbeats = 0;            // valid headers on validated applies
  uint64_t malformed_heartbeats = 0;  // headers ignored as unparsable
  uint64_t sweeps = 0;
  uint64_t sweeps_refused = 0;   // sweeps the census rule stopped
  uint64_t workers_cleared = 0;  // workers whose placements a sweep cleared
  uint64_t clear_failures = 0;   // clears the backend failed
  uint64_t marked_workers = 0;   // now: workers marked as heartbeating
};

class LivenessTable {
 public:
  using TimePoint = MonotonicClock::TimePoint;
  using Duration = MonotonicClock::Duration;

  // A malformed header is logged once per worker; the set of workers
  // already warned about is forgotten when it reaches this size, so that it
  // cannot grow without bound.
  static constexpr size_t kMaxWarnedWorkers = 4096;

  struct Expired {
    std::string worker_id;
    Duration silent_for;  // since its last heartbeat
  };
  struct SweepPlan {
    // The workers to clear, by id. Empty when the census rule refused.
    std::vector<Expired> to_clear;
    // Marked workers that have a record (the census).
    size_t census = 0;
    // Every one of two or more counted workers is past its deadline.
    bool refused = false;
  };

  // A marker's worker and last TTL.
  struct MarkerTtl {
    std::string worker_id;
    std::chrono::milliseconds ttl;
  };

  // Marks `worker_id` as heartbeating until now + ttl and counts the
  // heartbeat. REQUIRES: ttl > 0.
  void Heartbeat(std::string_view worker_id, TimePoint now,
                 std::chrono::milliseconds ttl);
  // Heartbeat without counting one: a marker brought back from the
  // restart-safe state. REQUIRES: ttl > 0.
  void Rearm(std::string_view worker_id, TimePoint now,
             std::chrono::milliseconds ttl);
  // Counts a malformed header. True when it is the first for `worker_id`
  // (as far as the table remembers): the caller then logs it.
  bool NoteMalformed(std::string_view worker_id);
  // Forgets the marker of `worker_id` (no-op when there is none).
  void Unmark(std::string_view worker_id);
  // The deadline of a marked worker; nullopt when it is not marked.
  std::optional<TimePoint> Deadline(std::string_view worker_id) const;
  bool IsMarked(std::string_view worker_id) const {
    return Deadline(worker_id).has_value();
  }
  // The TTL of the last heartbeat of a marked worker; nullopt when it is
  // not marked.
  std::optional<std::chrono::milliseconds> Ttl(
      std::string_view worker_id) const;
  // When a marked worker last beat (a marker restored at start-up counts
  // from its re-arming); nullopt when it is not marked. For the operator.
  std::optional<TimePoint> LastHeartbeat(std::string_view worker_id) const;
  size_t marker_count() const { return markers_.size(); }
  // Every marker, sorted by worker id.
  std::vector<MarkerTtl> MarkerTtls() const;

  // Counts a sweep at `now` and decides it: with two or more counted
  // workers all past their deadlines, nothing (refused); otherwise every
  // counted worker past its deadline, in id order. Expired markers of
  // workers without a record are dropped here, whatever the decision.
  // `has_record` must not call back into the table.
  SweepPlan PlanSweep(TimePoint now,
                      absl::FunctionRef<bool(std::string_view)> has_record);
  // As above, but each expired marker of a worker without a record is
  // dropped only when `before_drop` returns true for it (the Indexer logs
  // the drop first, and keeps the marker when it cannot). Neither callback
  // may call back into the table.
  SweepPlan PlanSweep(TimePoint now,
                      absl::FunctionRef<bool(std::string_view)> has_record,
                      absl::FunctionRef<bool(std::string_view)> before_drop);
  void CountCleared() { Bump(cleared_); }
  void CountClearFailure() { Bump(clear_failures_); }

  LivenessStats stats() const;

 private:
  struct Marker {
    TimePoint deadline;
    TimePoint last_heartbeat;
    std::chrono::milliseconds ttl;
  };

  static void Bump(std::atomic<uint64_t>& counter) {
    counter.fetch_add(1, std::memory_order_relaxed);
  }
  void PublishMarked() {
    marked_.store(markers_.size(), std::memory_order_relaxed);
  }

  absl::flat_hash_map<std::string, Marker> markers_;
  absl::flat_hash_set<std::string> warned_;
  std::atomic<uint64_t> heartbeats_{0};
  std::atomic<uint64_t> malformed_{0};
  std::atomic<uint64_t> sweeps_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> cleared_{0};
  std::atomic<uint64_t> clear_failures_{0};
  std::atomic<uint64_t> marked_{0};
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_LIVENESS_TABLE_H_
