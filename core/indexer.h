// Indexer: the transport-independent kv_indexer.v1 semantics over any
// IndexBackend. It validates requests (docs/contract.md, "Apply validation",
// "Match validation", "GetExternalKvHitCounts", "Recovery > Replace
// validation" and "Recovery > Configure validation"; prefix queries arrive
// validated, see "MatchExternalKvPrefix > Order of checks"), normalises them
// (repeated-hash collapsing), keeps every worker's sequence state (ready,
// epoch, checkpoint; "Recovery"), calls the backend, and assembles responses
// (MatchExternalKv ordering, the prefix rule engine, result sorting).
// Deadline shedding and admission are the server's job.
//
// Mutations (Apply, Replace, Configure, RemoveWorker and liveness sweeps)
// run one at a time under one mutex: the gate's decision, the backend
// batches it causes and the worker table change together, with no other
// mutation in between. Validation and the building of batches from a
// request happen before the mutex is taken. Queries never take it.
//
// Worker liveness ("Recovery > Worker liveness and removal"): an apply that
// passes validation and carries a heartbeat marks its worker until now + TTL
// on a monotonic clock; SweepLiveness clears the marked workers whose
// deadline passed, under the census rule. The Indexer runs no thread: the
// server's sweeper calls SweepLiveness.
//
// Thread safety: all methods may be called concurrently; the backend provides
// the snapshot isolation for queries.
#ifndef KVINDEXER_CORE_INDEXER_H_
#define KVINDEXER_CORE_INDEXER_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/clock.h"
#include "common/fidelity_header.h"
#include "common/heartbeat_header.h"
#include "core/backend_failure_monitor.h"
#include "core/liveness_table.h"
#include "core/mutation_log.h"
#include "core/prefix_answer.h"
#include "core/removal_reason.h"
#include "core/request_limits.h"
#include "core/sequence_gate_log.h"
#include "core/worker_lifecycle_log.h"
#include "core/worker_sequence_table.h"
#include "core/worker_snapshot.h"
#include "kv_indexer.pb.h"
#include "kvindexer/backend.h"

namespace kvindexer {

namespace v1 = ::kv_indexer::v1;

class Indexer {
 public:
  // REQUIRES: backend (and gate_log, clock and lifecycle_log, when given)
  // outlive the Indexer. OWNERSHIP: nothing is taken. A null gate_log or
  // lifecycle_log means an internal one that logs through spdlog; a null
  // clock means MonotonicClock::Real(). `limits` bound what clients can make
  // the index hold and serve (docs/contract.md, "Limits > Bounds").
  // backend_abi_minor is the minor version of the ABI the backend was built
  // against (LoadedBackend::abi_minor()): from 1 the Indexer removes workers
  // with IndexBackend::RemoveWorker, below it with CLEAR_ALL_AT_TIER batches.
  explicit Indexer(IndexBackend* backend, SequenceGateLog* gate_log = nullptr,
                   const RequestLimits& limits = RequestLimits{},
                   uint32_t backend_abi_minor = kBackendAbiMinor,
                   const MonotonicClock* clock = nullptr,
                   WorkerLifecycleLog* lifecycle_log = nullptr);
  Indexer(const Indexer&) = delete;
  Indexer& operator=(const Indexer&) = delete;

  // ApplyExternalKvBatch: validation, then the seed-era path or the sequence
  // gate (enforce_sequence). Fills *resp on OK. A failed validation changes
  // nothing; a gap (G4) clears the worker and returns FAILED_PRECONDITION.
  // `peer` names the sender (the gRPC peer) for duplicate-claim detection;
  // claims with equal peers never conflict, so "" turns it off. A valid
  // `heartbeat` on a request that passes validation marks the worker
  // whatever happens next (a malformed one is logged, once per worker, and
  // ignored). A valid `fidelity` is stored on the worker's record when the
  // apply takes effect (advisory, for the operator; a malformed one is
  // logged once per record and ignored). REQUIRES: resp != nullptr.
  [[nodiscard]] absl::Status Apply(const v1::ApplyExternalKvBatchRequest& req,
                                   v1::ApplyExternalKvBatchResponse* resp,
                                   std::string_view peer = {},
                                   const HeartbeatHeader& heartbeat = {},
                                   const FidelityHeader& fidelity = {});
  // ReplaceExternalKvSnapshot: the worker's whole placement and checkpoint,
  // installed by one atomic backend batch. `peer` and `fidelity` as for
  // Apply. REQUIRES: resp != nullptr.
  [[nodiscard]] absl::Status Replace(
      const v1::ReplaceExternalKvSnapshotRequest& req,
      v1::ReplaceExternalKvSnapshotResponse* resp, std::string_view peer = {},
      const FidelityHeader& fidelity = {});
  // ConfigureExpectedWorkers: the listed workers get records; every other
  // record is cleared and deleted. REQUIRES: resp != nullptr.
  [[nodiscard]] absl::Status Configure(
      const v1::ConfigureExpectedWorkersRequest& req,
      v1::ConfigureExpectedWorkersResponse* resp);

  // A mutating call's answer together with how far the log must be durable
  // before it may be given (docs/durability.md, "The write-ahead log").
  // Apply, Replace and Configure wait themselves; their *Pending forms
  // leave the wait to the caller, so that a server can log the next
  // mutation while this one's sync runs, and callers share syncs.
  class PendingAck {
   public:
    PendingAck() = default;
    // A call that never reached the log (an invalid request): nothing to
    // wait for.
    explicit PendingAck(absl::Status status) : status_(std::move(status)) {}
    // Whether Wait may block: a log was attached.
    bool waits() const { return log_ != nullptr; }
    // The call's status once the log is durable up to the end the call saw
    // (an error answer too: a gap's refusal must not be taken back by a
    // crash), or the log's UNAVAILABLE when it cannot be made durable.
    // Thread-safe; must not be called with the mutation mutex held.
    absl::Status Wait() const;

   private:
    friend class Indexer;
    absl::Status status_;
    MutationLog* log_ = nullptr;
    uint64_t end_ = 0;
  };
  [[nodiscard]] PendingAck ApplyPending(
      const v1::ApplyExternalKvBatchRequest& req,
      v1::ApplyExternalKvBatchResponse* resp, std::string_view peer = {},
      const HeartbeatHeader& heartbeat = {},
      const FidelityHeader& fidelity = {});
  [[nodiscard]] PendingAck ReplacePending(
      const v1::ReplaceExternalKvSnapshotRequest& req,
      v1::ReplaceExternalKvSnapshotResponse* resp, std::string_view peer = {},
      const FidelityHeader& fidelity = {});
  [[nodiscard]] PendingAck ConfigurePending(
      const v1::ConfigureExpectedWorkersRequest& req,
      v1::ConfigureExpectedWorkersResponse* resp);

  [[nodiscard]] absl::Status Match(const v1::MatchExternalKvRequest& req,
                                   v1::MatchExternalKvResponse* resp);
  // Scans and hands the answer to `deliver` (once, on OK) as views into the
  // query's own storage, so a caller can encode it without building the
  // response message. Unlike the other methods it does not validate: the
  // server validates a prefix query before admitting it, so that an invalid
  // one never takes a permit. An answer larger than
  // limits.max_prefix_answer_bytes is RESOURCE_EXHAUSTED and not delivered.
  // REQUIRES: ValidatePrefix(req).ok().
  [[nodiscard]] absl::Status MatchPrefix(
      const v1::MatchExternalKvPrefixRequest& req,
      absl::FunctionRef<void(const PrefixAnswer&)> deliver);
  [[nodiscard]] absl::Status HitCounts(
      const v1::GetExternalKvHitCountsRequest& req,
      v1::GetExternalKvHitCountsResponse* resp);

  // --- Worker liveness and removal ---

  // Removes `worker_id`: its placements and its record, host and backend
  // (an ABI 1.0 backend keeps its own record; its placements are cleared).
  // NOT_FOUND when the worker has no record (its heartbeat marker, if any,
  // is dropped all the same). When the backend fails, nothing changes, the
  // failure is logged and INTERNAL is returned.
  [[nodiscard]] absl::Status RemoveWorker(std::string_view worker_id,
                                          RemovalReason reason);

  struct SweepResult {
    size_t cleared = 0;  // workers whose placements were cleared
    size_t census = 0;   // marked workers with a record
    bool refused = false;
    // OK, or the first backend failure (the worker stays as it was and is
    // tried again at the next sweep).
    absl::Status status;
  };
  // One liveness sweep at `now` (a time of the Indexer's clock). Clears every
  // marked worker whose deadline passed, unless two or more are marked and
  // all have expired. A cleared worker loses its marker and its placements;
  // one listed by ConfigureExpectedWorkers keeps its host record, INVALID,
  // one that registered itself loses it. The backend record goes in both
  // cases (ABI 1.1).
  SweepResult SweepLiveness(MonotonicClock::TimePoint now);
  // Gives every marked worker its whole TTL again, counted from `now`. A
  // fleet replica calls it when it hears the event log again after an
  // outage, during which no heartbeat could reach it (docs/fleet.md,
  // "Worker liveness on replicas"). Takes the mutation mutex; not logged:
  // deadlines are not part of restart-safe state.
  void RearmHeartbeatMarkers(MonotonicClock::TimePoint now);
  // The liveness counters; never blocks.
  LivenessStats liveness_stats() const { return liveness_.stats(); }
  // The heartbeat deadline of a marked worker, nullopt when it is not
  // marked. For tests; takes the mutation mutex.
  std::optional<MonotonicClock::TimePoint> HeartbeatDeadline(
      std::string_view worker_id);
  const MonotonicClock& clock() const { return *clock_; }

  // A copy of `worker_id`'s record, or nullopt when it has none. For
  // diagnostics and tests; takes the mutation mutex.
  std::optional<WorkerRecord> WorkerState(std::string_view worker_id);
  // Every worker with a host record, sorted by id, with what the operator
  // needs to know about it (core/worker_snapshot.h). Takes the mutation
  // mutex; the backend's placement counts (ABI 1.2, one CountPlacements per
  // worker) are read after it is released, so a count may already include
  // a mutation that the rest of the snapshot predates. With
  // placement_counts false the backend is not asked (placements_by_tier
  // stays nullopt).
  std::vector<WorkerSnapshot> ListWorkers(bool placement_counts = true);
  // One worker's snapshot as ListWorkers gives it, without placement counts;
  // nullopt when it has no record. Takes the mutation mutex.
  std::optional<WorkerSnapshot> DescribeWorker(std::string_view worker_id);
  // `worker_id`'s placements per tier ([0] unused) from the backend; nullopt
  // when the backend predates ABI 1.2 or the count failed. Never takes the
  // mutation mutex.
  std::optional<std::array<uint64_t, kMaxTier + 1>> PlacementCounts(
      std::string_view worker_id);
  // The backend's ABI minor, as given to the constructor.
  uint32_t backend_abi_minor() const { return backend_abi_minor_; }

  // --- Backend failure (docs/health.md, "When the backend fails") ---

  // The first backend mutation that answered INTERNAL, after which the
  // backend cannot continue (include/kvindexer/backend.h, BackendCode), as
  // one line naming the operation, the worker and the backend's message;
  // nullopt while there was none. Every failed mutation is also logged,
  // throttled (core/backend_failure_monitor.h). Never blocks a mutation;
  // one atomic load while nothing failed.
  std::optional<std::string> BackendFailure() const {
    return backend_failures_.Failure();
  }
  // `callback` gets BackendFailure()'s text once, when it is first set (at
  // once when it already is); null clears it. It runs on the failing
  // mutation's thread with the mutation mutex held: it must not call back
  // into the Indexer. REQUIRES: whatever it captures outlives the Indexer's
  // mutations, or the callback is cleared first.
  void SetBackendFailureCallback(
      BackendFailureMonitor::FailureCallback callback) {
    backend_failures_.SetOnFailure(std::move(callback));
  }

  // --- Durability (docs/durability.md) ---

  // From now on every mutation that takes effect is appended to `log`
  // (under the mutation mutex, before it is applied), and a mutating call
  // returns OK only once the log is durable up to the end it saw, so that
  // nothing acknowledged (a duplicate's or a probe's answer included) can
  // be lost. A failed append changes nothing and returns UNAVAILABLE (a
  // heartbeat's marker is logged before its apply: when the apply's own
  // append fails, the worker stays marked). A backend refusal takes the
  // record back (MutationLog::Retract); a failed wait returns UNAVAILABLE
  // although the mutation took effect. Null detaches. REQUIRES: `log`
  // outlives its attachment and every call that saw it; call before
  // serving. Detaching (null after a log) is for shutdown: every later
  // mutation is refused with UNAVAILABLE, since it could not be logged.
  void AttachLog(MutationLog* log);
  // Applies one logged mutation again through the same single-writer code,
  // without limits, heartbeat metadata, claims or logging: at start-up on
  // the serving Indexer, and on a compaction's own Indexer. A record the
  // gate would now refuse changes nothing, as it did when it was logged,
  // and is OK. Only the record's shape is checked (the contract's fixed
  // limits, tiers, side arrays): a malformed one is INVALID_ARGUMENT and
  // changes nothing. A backend failure is returned as it is.
  absl::Status Replay(const state::v1::WalRecord& record);
  // Installs one part of a checkpoint; parts come in file order (workers,
  // then markers, then placements). Markers are re-armed to now + TTL.
  // Placements go to the backend as one REPORT with the worker record's
  // address and spec; those of a worker without a record, or malformed
  // parts, are INVALID_ARGUMENT. REQUIRES: before serving, on an Indexer
  // that has applied nothing else.
  absl::Status Restore(const state::v1::CheckpointChunk& chunk);
  // Hands the host's part of a checkpoint to `sink`: every WorkerState
  // (sorted by worker id), then every HeartbeatMarker. Takes the mutation
  // mutex.
  void ExportHost(
      absl::FunctionRef<void(const state::v1::CheckpointChunk&)> sink);
  // Worker records held, for the recovery log line. Takes the mutation
  // mutex.
  size_t worker_count();

 private:
  // Where a mutation comes from. A live one (a client's request, a sweep)
  // is checked against the limits, notes heartbeats and claims, is appended
  // to log_ before it takes effect and writes its log lines; a replayed one
  // (Replay) only takes effect, exactly as it did when it was logged.
  enum class Origin { kLive, kReplay };

  // How far the log must be durable before a mutating call may answer OK:
  // the log's end when the call released the mutex, so that an answer that
  // rests on an earlier writer's record (a duplicate, a probe) waits for it
  // too. No log: nothing to wait for.
  struct DurableMark {
    MutationLog* log = nullptr;
    uint64_t end = 0;
  };
  // REQUIRES: mutation_mu_ held.
  DurableMark MarkLocked() const {
    return log_ == nullptr ? DurableMark{} : DurableMark{log_, log_->end()};
  }
  static PendingAck Pending(absl::Status status, const DurableMark& mark) {
    PendingAck ack(std::move(status));
    ack.log_ = mark.log;
    ack.end_ = mark.end;
    return ack;
  }
  // `status` once the log is durable up to `mark` (PendingAck::Wait).
  // REQUIRES: mutation_mu_ not held.
  static absl::Status AckWhenDurable(absl::Status status,
                                     const DurableMark& mark) {
    return Pending(std::move(status), mark).Wait();
  }
  // UNAVAILABLE once a log was attached and then detached (the server is
  // shutting down): a mutation now could be answered without being logged.
  // REQUIRES: mutation_mu_ held.
  absl::Status CheckLogOpenLocked() const;
  // The log a mutation of `origin` is appended to; null when none.
  MutationLog* LogFor(Origin origin) const {
    return origin == Origin::kLive ? log_ : nullptr;
  }

  // The bodies of the mutating calls, run under mutation_mu_ by the live
  // calls and by Replay. Replayed, a refusal (a gate step, a missing
  // record) is OK: the record changes nothing, as it changed nothing live.
  // REQUIRES: mutation_mu_ held; the request passed validation and `batch`
  // is its backend form.
  absl::Status ApplyLocked(const v1::ApplyExternalKvBatchRequest& req,
                           const ApplyBatchView& batch,
                           v1::ApplyExternalKvBatchResponse* resp,
                           std::string_view peer,
                           const HeartbeatHeader& heartbeat,
                           const FidelityHeader& fidelity, Origin origin);
  // The gated path, from G1.
  absl::Status ApplyGated(const v1::ApplyExternalKvBatchRequest& req,
                          const ApplyBatchView& batch,
                          v1::ApplyExternalKvBatchResponse* resp,
                          const FidelityHeader& fidelity, Origin origin);
  absl::Status ReplaceLocked(const v1::ReplaceExternalKvSnapshotRequest& req,
                             const ApplyBatchView& batch,
                             v1::ReplaceExternalKvSnapshotResponse* resp,
                             std::string_view peer,
                             const FidelityHeader& fidelity, Origin origin);
  // The operator's bookkeeping when a mutation took effect for `record`
  // (WorkerRecord::last_apply, fidelity): live mutations only, so that a
  // replayed one leaves it unset. REQUIRES: mutation_mu_ held.
  void NoteTookEffect(std::string_view worker_id, WorkerRecord& record,
                      const FidelityHeader& fidelity, Origin origin);
  // A copy of one record for the operator. REQUIRES: mutation_mu_ held.
  WorkerSnapshot SnapshotLocked(const std::string& worker_id,
                                const WorkerRecord& record) const;
  // The worker ids a ConfigureExpectedWorkers request lists; views `req`.
  static absl::flat_hash_set<absl::string_view> ListedIds(
      const v1::ConfigureExpectedWorkersRequest& req);
  // `listed` holds the request's worker ids (ListedIds).
  absl::Status ConfigureLocked(
      const v1::ConfigureExpectedWorkersRequest& req,
      const absl::flat_hash_set<absl::string_view>& listed,
      v1::ConfigureExpectedWorkersResponse* resp, Origin origin);
  // NOT_FOUND (OK when replayed) when `worker_id` has no record.
  absl::Status RemoveWorkerLocked(std::string_view worker_id,
                                  RemovalReason reason, Origin origin);
  SweepResult SweepLocked(MonotonicClock::TimePoint now);

  // Marks or warns for the heartbeat of a validated apply. A worker without
  // a record (`has_record` false) gets a new marker only while fewer than
  // max_workers exist. A marker that appears or changes its TTL is logged
  // first; a failed append marks nothing and is returned. REQUIRES:
  // mutation_mu_ held; a live apply.
  absl::Status NoteHeartbeat(std::string_view worker_id,
                             const HeartbeatHeader& heartbeat, bool has_record);
  // Takes every placement of `worker_id` out of the backend: RemoveWorker
  // from ABI 1.1 (the backend record goes too), else one CLEAR batch when
  // the record is ready. Logs a failure. REQUIRES: mutation_mu_ held.
  absl::Status DropFromBackend(std::string_view worker_id,
                               const WorkerRecord& record,
                               RemovalReason reason);
  // DropFromBackend, then the host record and the marker go. REQUIRES:
  // mutation_mu_ held; `worker_id` has a record.
  absl::Status RemoveLocked(std::string_view worker_id, RemovalReason reason);
  // A sweep's clear of one expired worker, not logged here. REQUIRES:
  // mutation_mu_ held; `worker_id` has a record.
  absl::Status ClearExpired(const LivenessTable::Expired& expired,
                            bool* cleared, Origin origin);

  // backend_->Apply, with a failure recorded in backend_failures_.
  BackendStatus ApplyToBackend(const ApplyBatchView& batch);

  // Replay of the records that are not requests (core/indexer_durability.cc).
  // REQUIRES: mutation_mu_ held.
  absl::Status ReplayLivenessClear(std::string_view worker_id);

  // Records the claim of a request on `record` and logs a conflict at WARN,
  // throttled per worker ("Limits > Bounds > Duplicate claims"). REQUIRES:
  // mutation_mu_ held.
  void ObserveClaim(std::string_view worker_id, WorkerRecord& record,
                    const WorkerClaim& claim);

  IndexBackend* backend_;
  // Null: in memory only. Set before serving (AttachLog); guarded by
  // mutation_mu_.
  MutationLog* log_ = nullptr;
  // A log was attached and then detached: mutations are refused
  // (CheckLogOpenLocked). Guarded by mutation_mu_.
  bool log_closed_ = false;
  const RequestLimits limits_;
  SequenceGateLog own_gate_log_;
  SequenceGateLog* gate_log_;
  const uint32_t backend_abi_minor_;
  const MonotonicClock* clock_;
  WorkerLifecycleLog own_lifecycle_log_;
  WorkerLifecycleLog* lifecycle_log_;
  // Held across every mutation; guards workers_ and liveness_'s markers.
  std::mutex mutation_mu_;
  WorkerSequenceTable workers_;
  LivenessTable liveness_;
  // Set under the mutex by a removal that freed a backend record; the
  // operation trims the heap once after releasing the mutex.
  std::atomic<bool> trim_wanted_{false};
  // Failed backend mutations: log lines and the backend-failure rule.
  BackendFailureMonitor backend_failures_{clock_};
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_INDEXER_H_
