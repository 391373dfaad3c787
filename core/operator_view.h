// OperatorView: the Indexer as the operator sees and steers it: its workers,
// their removal, worker liveness, and the backend's figures and health
// (docs/admin-api.md, docs/metrics.md, docs/health.md). The admin service,
// the metrics, the liveness sweeper and a replica's liveness gate hold it.
// One face of the Indexer (core/indexer.h), which owns the state; get it
// with Indexer::operator_view().
//
// Worker liveness ("Recovery > Worker liveness and removal" in
// docs/contract.md): an apply that passes validation and carries a
// heartbeat marks its worker until now + TTL on the Indexer's monotonic
// clock; SweepLiveness clears the marked workers whose deadline passed,
// under the census rule. The Indexer runs no thread: the server's sweeper
// calls SweepLiveness.
//
// RemoveWorker and SweepLiveness are mutations: they run under the
// Indexer's mutation mutex, one at a time with every other mutation, are
// logged when a state log is attached (core/durable_state.h) and return
// once it is durable. The methods that say they take the mutex wait behind
// a mutation in progress; the others never block a mutation.
//
// Listings, counts and DescribeWorker read the Indexer's worker directory
// (core/worker_directory.h), never the mutation mutex: a listing holds up
// a mutation for at most one page, however many workers there are.
//
// Thread safety: every method may be called concurrently.
// OWNERSHIP: a holder borrows the face; REQUIRES the object behind it (the
// Indexer) to outlive the holder. Never destroyed through the face.
#ifndef KVINDEXER_CORE_OPERATOR_VIEW_H_
#define KVINDEXER_CORE_OPERATOR_VIEW_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "common/clock.h"
#include "core/backend_failure_monitor.h"
#include "core/liveness_table.h"
#include "core/placement_bound.h"
#include "core/prefix_explain.h"
#include "core/removal_reason.h"
#include "core/snapshot_staging.h"
#include "core/worker_directory.h"
#include "core/worker_sequence_table.h"
#include "core/worker_snapshot.h"
#include "kv_indexer.pb.h"
#include "kvindexer/backend.h"

namespace kvindexer {

// What the placement bound evicted since the process started, by
// EvictionReason (index = its value; [0] unused): tiers cleared, and the
// placements they held. Replayed evictions are not counted.
struct EvictionStats {
  std::array<uint64_t, kMaxEvictionReason + 1> tiers{};
  std::array<uint64_t, kMaxEvictionReason + 1> placements{};
  // The configured bound (RequestLimits::placement_bound).
  PlacementBound bound;
};

class OperatorView {
 public:
  OperatorView(const OperatorView&) = delete;
  OperatorView& operator=(const OperatorView&) = delete;

  // --- Workers ---

  // Every worker with a host record, sorted by id, with what the operator
  // needs to know about it (core/worker_snapshot.h): ListWorkersPage until
  // the end, so each worker is as some mutation left it, and one may change
  // between pages. With placement_counts, the backend's counts (ABI 1.2, one
  // CountPlacements per worker) are read after the page; a count may
  // already include a mutation that the rest of the snapshot predates.
  // Without, the backend is not asked (placements_by_tier stays nullopt).
  virtual std::vector<WorkerSnapshot> ListWorkers(
      bool placement_counts = true) = 0;
  // Up to `limit` workers whose ids sort after `after` ("" is before every
  // id), by id, as ListWorkers gives them; fewer than `limit` means no more
  // follow. REQUIRES: limit > 0.
  virtual std::vector<WorkerSnapshot> ListWorkersPage(
      std::string_view after, size_t limit, bool placement_counts) = 0;
  // The workers with a record, counted by state. Never blocks a mutation;
  // O(1).
  virtual WorkerCounts CountWorkers() const = 0;
  // One worker's snapshot as ListWorkers gives it, without placement counts;
  // nullopt when it has no record. Never blocks a mutation.
  virtual std::optional<WorkerSnapshot> DescribeWorker(
      std::string_view worker_id) = 0;
  // A copy of `worker_id`'s record, or nullopt when it has none. For
  // diagnostics and tests; takes the mutation mutex.
  virtual std::optional<WorkerRecord> WorkerState(
      std::string_view worker_id) = 0;
  // `worker_id`'s placements per tier ([0] unused) from the backend; nullopt
  // when the backend predates ABI 1.2 or the count failed. Never takes the
  // mutation mutex.
  virtual std::optional<std::array<uint64_t, kMaxTier + 1>> PlacementCounts(
      std::string_view worker_id) = 0;
  // Removes `worker_id`: its placements and its record, host and backend
  // (an ABI 1.0 backend keeps its own record; its placements are cleared).
  // NOT_FOUND when the worker has no record (its heartbeat marker, if any,
  // is dropped all the same). When the backend fails, nothing changes, the
  // failure is logged and INTERNAL is returned. A mutation; `reason` is
  // logged with it.
  [[nodiscard]] virtual absl::Status RemoveWorker(std::string_view worker_id,
                                                  RemovalReason reason) = 0;
  // The prefix query `req` explained (core/prefix_explain.h) on the
  // Indexer's backend; a coverage query selects its streams as MatchPrefix
  // does. `named_workers` are backend ids; one the scan does not announce
  // is described from its host record (DescribeWorker). REQUIRES:
  // ValidatePrefix(req).ok(); out != nullptr.
  [[nodiscard]] virtual absl::Status ExplainPrefix(
      const ::kv_indexer::v1::MatchExternalKvPrefixRequest& req,
      const std::vector<std::string>& named_workers,
      PrefixExplanation* out) = 0;

  // --- Worker liveness ---

  struct SweepResult {
    size_t cleared = 0;  // workers whose placements were cleared
    size_t census = 0;   // marked workers with a record
    bool refused = false;
    // OK, or the first failure: of the backend (the worker stays as it was
    // and is tried again at the next sweep) or of the state log.
    absl::Status status;
  };
  // One liveness sweep at `now` (a time of clock()). Clears every marked
  // worker whose deadline passed, unless two or more are marked and all
  // have expired. A cleared worker loses its marker and its placements;
  // one listed by ConfigureExpectedWorkers keeps its host record, INVALID,
  // one that registered itself loses it. The backend record goes in both
  // cases (ABI 1.1). A mutation.
  virtual SweepResult SweepLiveness(MonotonicClock::TimePoint now) = 0;
  // Gives every marked worker its whole TTL again, counted from `now`. A
  // fleet replica calls it when it hears the event log again after an
  // outage, during which no heartbeat could reach it (docs/fleet.md,
  // "Worker liveness on replicas"). Takes the mutation mutex; not logged:
  // deadlines are not part of restart-safe state.
  virtual void RearmHeartbeatMarkers(MonotonicClock::TimePoint now) = 0;
  // The liveness counters; never blocks.
  virtual LivenessStats liveness_stats() const = 0;
  // The placement bound's eviction counters; never blocks.
  virtual EvictionStats eviction_stats() const = 0;
  // Brings the index within the placement bound as a live mutation that
  // changed `worker_id` would (docs/contract.md, "The placement bound"),
  // logging its evictions. For a fleet replica, which installs a staged
  // commit from the event log as a replay does (no decision) and then
  // calls this in log order. A mutation; no-op without a bound.
  virtual void EnforcePlacementBound(std::string_view worker_id) = 0;
  // The index-wide evictions the index needs now (PlanEvictions over every
  // stream, the per-worker bound left out) and the share they were planned
  // against; no evictions when it is within max_placements or that is off.
  // For a fleet replica, which proposes them to the event log instead of
  // applying them. Takes the mutation mutex; changes nothing.
  virtual IndexEvictionPlan PlanIndexEvictions() = 0;
  // Applies evictions the event log decided, in order. Each clears the
  // named tier of the stream where the stream holds more than `share`
  // placements (0: no such check) and any at that tier; elsewhere it does
  // nothing and marks nothing (a replica that cleared the stream for
  // silence, a stream that shrank since the plan). A backend that cannot
  // count (before ABI 1.2) gets the clear without the checks. Counted and
  // logged as live evictions. Stops at the first failure and answers it.
  // A mutation; works with or without a bound.
  [[nodiscard]] virtual absl::Status ApplyLoggedEvictions(
      const std::vector<PlannedEviction>& evictions, uint64_t share) = 0;
  // The heartbeat deadline of a marked worker, nullopt when it is not
  // marked. For tests; takes the mutation mutex.
  virtual std::optional<MonotonicClock::TimePoint> HeartbeatDeadline(
      std::string_view worker_id) = 0;
  // The Indexer's clock: heartbeat deadlines, WorkerSnapshot times.
  virtual const MonotonicClock& clock() const = 0;
  // The indexer epoch, as IndexOperations::IndexerEpoch.
  virtual std::string IndexerEpoch() const = 0;

  // --- Staged snapshots (docs/contract.md, "Recovery > Staged snapshots") ---

  // The open transactions' figures; takes the staging table's mutex only.
  virtual StagingStats staging_stats() = 0;
  // Placements the stream's open transaction has staged; nullopt when it
  // has none. Takes the staging table's mutex only.
  virtual std::optional<uint64_t> StagedPlacements(
      std::string_view worker_id) = 0;
  // Expires the transactions idle past the timeout now (every staging call
  // also does), for a periodic sweep; returns how many.
  virtual size_t ExpireIdleStaging() = 0;

  // --- The backend (docs/health.md, "When the backend fails") ---

  // The backend's own figures (IndexBackend::GetStats), every field of this
  // host's BackendStats asked for. Never takes the mutation mutex.
  virtual BackendStats ReadBackendStats() = 0;
  // The first backend mutation that answered INTERNAL, after which the
  // backend cannot continue (include/kvindexer/backend.h, BackendCode), as
  // one line naming the operation, the worker and the backend's message;
  // nullopt while there was none. Every failed mutation is also logged,
  // throttled (core/backend_failure_monitor.h). Never blocks a mutation;
  // one atomic load while nothing failed.
  virtual std::optional<std::string> BackendFailure() const = 0;
  // `callback` gets BackendFailure()'s text once, when it is first set (at
  // once when it already is); null clears it. It runs on the failing
  // mutation's thread with the mutation mutex held: it must not call back
  // into the Indexer. REQUIRES: whatever it captures outlives the Indexer's
  // mutations, or the callback is cleared first.
  virtual void SetBackendFailureCallback(
      BackendFailureMonitor::FailureCallback callback) = 0;

 protected:
  OperatorView() = default;
  ~OperatorView() = default;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_OPERATOR_VIEW_H_
