// Indexer: the transport-independent kv_indexer.v1 semantics over any
// IndexBackend. It validates requests, normalises them (repeated-hash
// collapsing), keeps every worker's sequence state (ready, epoch,
// checkpoint; docs/contract.md, "Recovery") and heartbeat markers, calls the
// backend, and assembles responses (MatchExternalKv ordering, the prefix
// rule engine, result sorting).
//
// The Indexer owns that state; what it offers, it offers through three
// faces, each declared in a header of its own with its contracts, so that
// a caller depends on the one it uses:
//   operations()     core/index_operations.h  the kv_indexer.v1 calls
//   operator_view()  core/operator_view.h     workers, removal, liveness,
//                                             backend figures and health
//   durable_state()  core/durable_state.h     the state log, replay,
//                                             checkpoints in and out
// Whoever constructs the Indexer hands out the faces; each lives as long as
// the Indexer. The faces are private bases: a call always goes through a
// face, so the default arguments the faces declare are the only ones.
//
// Every mutation, whichever face it comes through, runs under one mutex:
// one at a time, each with its gate decision, backend batches and worker
// table change together. Queries never take it, and neither do the
// operator's listings: they read a directory of worker snapshots the
// mutations publish (core/worker_directory.h).
//
// Thread safety: every method of every face may be called concurrently;
// the backend provides the snapshot isolation for queries.
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
#include "core/durable_state.h"
#include "core/index_operations.h"
#include "core/liveness_table.h"
#include "core/mutation_log.h"
#include "core/operator_view.h"
#include "core/pending_ack.h"
#include "core/placement_bound.h"
#include "core/prefix_answer.h"
#include "core/removal_reason.h"
#include "core/request_limits.h"
#include "core/sequence_gate_log.h"
#include "core/snapshot_staging.h"
#include "core/staging_limits.h"
#include "core/stream_coverage.h"
#include "core/stream_key.h"
#include "core/worker_directory.h"
#include "core/worker_lifecycle_log.h"
#include "core/worker_sequence_table.h"
#include "core/worker_snapshot.h"
#include "kv_indexer.pb.h"
#include "kvindexer/backend.h"

namespace kvindexer {

class Indexer final : private IndexOperations,
                      private OperatorView,
                      private DurableState {
 public:
  // REQUIRES: backend (and gate_log, clock and lifecycle_log, when given)
  // outlive the Indexer. OWNERSHIP: nothing is taken. A null gate_log or
  // lifecycle_log means an internal one that logs through spdlog; a null
  // clock means MonotonicClock::Real(). `limits` bound what clients can make
  // the index hold and serve (docs/contract.md, "Limits > Bounds").
  // backend_abi_minor is the minor version of the ABI the backend was built
  // against (LoadedBackend::abi_minor()): from 1 the Indexer removes workers
  // with IndexBackend::RemoveWorker, below it with CLEAR_ALL_AT_TIER batches;
  // from 2 it counts placements with IndexBackend::CountPlacements.
  // `staging` bounds staged snapshots (core/staging_limits.h); their idle
  // timeout runs on `clock`.
  explicit Indexer(IndexBackend* backend, SequenceGateLog* gate_log = nullptr,
                   const RequestLimits& limits = RequestLimits{},
                   uint32_t backend_abi_minor = kBackendAbiMinor,
                   const MonotonicClock* clock = nullptr,
                   WorkerLifecycleLog* lifecycle_log = nullptr,
                   const StagingLimits& staging = StagingLimits{});
  Indexer(const Indexer&) = delete;
  Indexer& operator=(const Indexer&) = delete;

  IndexOperations& operations() { return *this; }
  OperatorView& operator_view() { return *this; }
  DurableState& durable_state() { return *this; }

  // IndexOperations::ConfigureIfUnchanged, waiting for the mutation mutex
  // instead of declining when it is busy: for a caller that may block (a
  // replica's write-through, on the apply thread).
  std::optional<PendingAck> ConfigureIfUnchangedWaiting(
      const v1::ConfigureExpectedWorkersRequest& req,
      v1::ConfigureExpectedWorkersResponse* resp);

 private:
  // --- IndexOperations (core/index_operations.h) ---
  PendingAck Apply(const v1::ApplyExternalKvBatchRequest& req,
                   v1::ApplyExternalKvBatchResponse* resp,
                   const MutationOptions& options) override;
  PendingAck Replace(const v1::ReplaceExternalKvSnapshotRequest& req,
                     v1::ReplaceExternalKvSnapshotResponse* resp,
                     const MutationOptions& options) override;
  PendingAck Configure(const v1::ConfigureExpectedWorkersRequest& req,
                       v1::ConfigureExpectedWorkersResponse* resp) override;
  std::optional<PendingAck> ConfigureIfUnchanged(
      const v1::ConfigureExpectedWorkersRequest& req,
      v1::ConfigureExpectedWorkersResponse* resp) override;
  absl::Status Match(const v1::MatchExternalKvRequest& req,
                     v1::MatchExternalKvResponse* resp) override;
  PendingAck Invalidate(const v1::InvalidateWorkerRequest& req,
                        v1::InvalidateWorkerResponse* resp) override;
  // Staged snapshots: core/indexer_staging.cc.
  PendingAck Begin(const v1::BeginExternalKvSnapshotRequest& req,
                   v1::BeginExternalKvSnapshotResponse* resp) override;
  PendingAck Append(const v1::AppendExternalKvSnapshotRequest& req,
                    v1::AppendExternalKvSnapshotResponse* resp) override;
  PendingAck Commit(const v1::CommitExternalKvSnapshotRequest& req,
                    v1::CommitExternalKvSnapshotResponse* resp,
                    const MutationOptions& options) override;
  PendingAck Abort(const v1::AbortExternalKvSnapshotRequest& req,
                   v1::AbortExternalKvSnapshotResponse* resp) override;
  std::string IndexerEpoch() const override { return indexer_epoch_; }
  absl::Status MatchPrefix(
      const v1::MatchExternalKvPrefixRequest& req,
      absl::FunctionRef<void(const PrefixAnswer&)> deliver) override;
  absl::Status HitCounts(const v1::GetExternalKvHitCountsRequest& req,
                         v1::GetExternalKvHitCountsResponse* resp) override;

  // --- OperatorView (core/operator_view.h) ---
  std::vector<WorkerSnapshot> ListWorkers(bool placement_counts) override;
  std::vector<WorkerSnapshot> ListWorkersPage(std::string_view after,
                                              size_t limit,
                                              bool placement_counts) override;
  WorkerCounts CountWorkers() const override { return directory_.counts(); }
  std::optional<WorkerSnapshot> DescribeWorker(
      std::string_view worker_id) override;
  std::optional<WorkerRecord> WorkerState(std::string_view worker_id) override;
  std::optional<std::array<uint64_t, kMaxTier + 1>> PlacementCounts(
      std::string_view worker_id) override;
  absl::Status RemoveWorker(std::string_view worker_id,
                            RemovalReason reason) override;
  absl::Status ExplainPrefix(const v1::MatchExternalKvPrefixRequest& req,
                             const std::vector<std::string>& named_workers,
                             PrefixExplanation* out) override;
  SweepResult SweepLiveness(MonotonicClock::TimePoint now) override;
  void RearmHeartbeatMarkers(MonotonicClock::TimePoint now) override;
  LivenessStats liveness_stats() const override { return liveness_.stats(); }
  EvictionStats eviction_stats() const override;
  void EnforcePlacementBound(std::string_view worker_id) override;
  IndexEvictionPlan PlanIndexEvictions() override;
  absl::Status ApplyLoggedEvictions(
      const std::vector<PlannedEviction>& evictions, uint64_t share) override;
  StagingStats staging_stats() override { return staging_.Stats(); }
  std::optional<uint64_t> StagedPlacements(
      std::string_view worker_id) override {
    return staging_.StagedPlacements(worker_id);
  }
  size_t ExpireIdleStaging() override { return staging_.ExpireIdle(); }
  std::optional<MonotonicClock::TimePoint> HeartbeatDeadline(
      std::string_view worker_id) override;
  const MonotonicClock& clock() const override { return *clock_; }
  BackendStats ReadBackendStats() override;
  std::optional<std::string> BackendFailure() const override {
    return backend_failures_.Failure();
  }
  void SetBackendFailureCallback(
      BackendFailureMonitor::FailureCallback callback) override {
    backend_failures_.SetOnFailure(std::move(callback));
  }

  // --- DurableState (core/durable_state.h; core/indexer_durability.cc) ---
  void AttachLog(MutationLog* log) override;
  absl::Status Replay(const state::v1::WalRecord& record) override;
  absl::Status Restore(const state::v1::CheckpointChunk& chunk) override;
  void ExportHost(
      absl::FunctionRef<void(const state::v1::CheckpointChunk&)> sink) override;
  size_t worker_count() override;
  void SetIndexerEpoch(std::string epoch) override {
    indexer_epoch_ = std::move(epoch);
  }

  // Where a mutation comes from. A live one (a client's request, a sweep)
  // is checked against the limits, notes heartbeats and claims, is appended
  // to log_ before it takes effect and writes its log lines; a replayed one
  // (Replay) only takes effect, exactly as it did when it was logged.
  enum class Origin { kLive, kReplay };

  // A live mutation's answer, to be given once the log is durable up to
  // its end now: an answer that rests on an earlier writer's record (a
  // duplicate, a probe) waits for that record too. No log: nothing to wait
  // for. REQUIRES: mutation_mu_ held; Wait it after releasing the mutex.
  PendingAck AckLocked(absl::Status status) const {
    return log_ == nullptr ? PendingAck(std::move(status))
                           : PendingAck(std::move(status), log_, log_->end());
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
  // calls and by Replay (with MutationOptions{}). Replayed, a refusal (a
  // gate step, a missing record) is OK: the record changes nothing, as it
  // changed nothing live. REQUIRES: mutation_mu_ held; the request passed
  // validation and `batch` is its backend form.
  //
  // An apply with enforce_sequence: the sequence gate, from G1.
  // `id` is the stream's backend id (core/stream_key.h).
  absl::Status ApplyGated(const v1::ApplyExternalKvBatchRequest& req,
                          std::string_view id, const ApplyBatchView& batch,
                          v1::ApplyExternalKvBatchResponse* resp,
                          const MutationOptions& options, Origin origin);
  // An apply without: the seed-era path, applied whatever the sequence
  // state, which it never reads or changes beyond making the worker ready.
  absl::Status ApplySeedEra(const v1::ApplyExternalKvBatchRequest& req,
                            std::string_view id, const ApplyBatchView& batch,
                            v1::ApplyExternalKvBatchResponse* resp,
                            const MutationOptions& options, Origin origin);
  absl::Status ReplaceLocked(const v1::ReplaceExternalKvSnapshotRequest& req,
                             std::string_view id, const ApplyBatchView& batch,
                             v1::ReplaceExternalKvSnapshotResponse* resp,
                             const MutationOptions& options, Origin origin);
  // A staged snapshot's install (core/indexer_staging.cc): the stream `id`
  // becomes exactly `commit`'s placements, as ReplaceLocked installs, with
  // Begin's metadata by the keep rule. The record is logged first and
  // taken back when the backend refuses. No configured record: FAILED_
  // PRECONDITION (OK when replayed). REQUIRES: mutation_mu_ held; commit's
  // tiers in 1..3 with matching side arrays.
  absl::Status InstallStagedLocked(
      const state::v1::StagedSnapshotCommit& commit, std::string_view id,
      Origin origin);
  // The operator's bookkeeping when a mutation took effect for `record`
  // (WorkerRecord::last_apply, fidelity): live mutations only, so that a
  // replayed one leaves it unset. REQUIRES: mutation_mu_ held.
  void NoteTookEffect(std::string_view worker_id, WorkerRecord& record,
                      const FidelityHeader& fidelity, Origin origin);
  // A copy of one record for the operator. REQUIRES: mutation_mu_ held.
  WorkerSnapshot SnapshotLocked(const std::string& worker_id,
                                const WorkerRecord& record) const;
  // Publishes the workers the table noted as changed to directory_.
  // REQUIRES: mutation_mu_ held.
  void PublishChangedLocked();
  // Holds mutation_mu_ for a scope; the scope's changes to worker records
  // reach directory_ before the mutex is released, so that no reader sees
  // a mutation half-published and every mutation publishes, whichever way
  // it leaves.
  class MutationLock {
   public:
    explicit MutationLock(Indexer& indexer)
        : indexer_(indexer), lock_(indexer.mutation_mu_) {}
    ~MutationLock() { indexer_.PublishChangedLocked(); }
    MutationLock(const MutationLock&) = delete;
    MutationLock& operator=(const MutationLock&) = delete;

   private:
    Indexer& indexer_;
    std::lock_guard<std::mutex> lock_;
  };
  // The streams a ConfigureExpectedWorkers request lists: their backend
  // ids in request order, and as a set.
  struct ListedStreams {
    explicit ListedStreams(const std::vector<StreamKey>& keys);
    std::vector<std::string> ids;
    absl::flat_hash_set<std::string> set;
  };
  // Whether `req` would create, remove or alter no record and call nothing
  // in the backend: every record is listed, configured, with the listed
  // address, (when the entry gives one) spec, and metadata the entry would
  // not change. REQUIRES: mutation_mu_ held; `listed` is req's.
  bool ConfigureChangesNothingLocked(
      const v1::ConfigureExpectedWorkersRequest& req,
      const ListedStreams& listed) const;
  // ConfigureIfUnchanged with the mutex taken at once (`wait` false) or
  // waited for.
  std::optional<PendingAck> ConfigureIfUnchangedImpl(
      const v1::ConfigureExpectedWorkersRequest& req,
      v1::ConfigureExpectedWorkersResponse* resp, bool wait);
  // The counts of an unchanged Configure's answer. REQUIRES: mutation_mu_
  // held.
  void FillUnchangedConfigureLocked(
      v1::ConfigureExpectedWorkersResponse* resp) const;
  absl::Status ConfigureLocked(const v1::ConfigureExpectedWorkersRequest& req,
                               const ListedStreams& listed,
                               v1::ConfigureExpectedWorkersResponse* resp,
                               Origin origin);
  // InvalidateWorker's body for the stream `id`: NOT_FOUND (OK when
  // replayed) unless a Configure listed it. REQUIRES: mutation_mu_ held.
  absl::Status InvalidateLocked(const v1::InvalidateWorkerRequest& req,
                                std::string_view id, Origin origin);
  // NOT_FOUND (OK when replayed) when `worker_id` has no record.
  absl::Status RemoveWorkerLocked(std::string_view worker_id,
                                  RemovalReason reason, Origin origin);
  // REQUIRES: mutation_mu_ held.
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

  // The placement bound (core/placement_bound.h). RefreshTallyLocked counts
  // again the placements of the records noted as changed since its last
  // call. EnforceBoundLocked, after a live mutation that can add
  // placements, plans and applies the evictions that bring the index
  // within the bound; EvictLocked logs one and clears the tier. Both do
  // nothing while the bound is off. REQUIRES: mutation_mu_ held.
  // `also` names streams to check against the per-worker bound besides
  // the ones noted as changed (a change published already).
  void RefreshTallyLocked(std::vector<std::string>* refreshed);
  void EnforceBoundLocked(std::string_view also = {});
  absl::Status EvictLocked(std::string_view worker_id, uint32_t tier,
                           EvictionReason reason, uint64_t placements,
                           Origin origin);
  // Whether `worker_id`'s record is marked evicted. REQUIRES: mutation_mu_
  // held.
  bool EvictedLocked(std::string_view worker_id) const;

  // backend_->Apply, with a failure recorded in backend_failures_.
  BackendStatus ApplyToBackend(const ApplyBatchView& batch);

  // Replay of the records that are not requests (core/indexer_durability.cc).
  // REQUIRES: mutation_mu_ held.
  absl::Status ReplayLivenessClear(std::string_view worker_id);

  // Records the claim of a request on `worker_id`'s record (its `claims`)
  // and logs a conflict at WARN, throttled per worker ("Limits > Bounds >
  // Duplicate claims"). REQUIRES: mutation_mu_ held.
  void ObserveClaim(std::string_view worker_id, WorkerClaims& claims,
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
  // Held across every mutation (through MutationLock); guards workers_ and
  // liveness_'s markers.
  std::mutex mutation_mu_;
  WorkerSequenceTable workers_;
  LivenessTable liveness_;
  // What the operator reads of workers_ and liveness_, published by
  // MutationLock.
  WorkerDirectory directory_;
  // What coverage queries read of workers_, published with directory_.
  StreamCoverageTable coverage_;
  // Set before serving and never changed after (SetIndexerEpoch).
  std::string indexer_epoch_;
  // Set under the mutex by a removal that freed a backend record; the
  // operation trims the heap once after releasing the mutex.
  std::atomic<bool> trim_wanted_{false};
  // Every worker's placement counts while limits_.placement_bound is on;
  // tally_counted_ is how many of workers_.changed() RefreshTallyLocked has
  // counted since the last publication. Guarded by mutation_mu_.
  PlacementTally tally_;
  size_t tally_counted_ = 0;
  // Live evictions, by EvictionReason (index = its value): tiers cleared
  // and the placements they held. Written under mutation_mu_, read by the
  // operator without it.
  std::array<std::atomic<uint64_t>, kMaxEvictionReason + 1> evictions_{};
  std::array<std::atomic<uint64_t>, kMaxEvictionReason + 1>
      evicted_placements_{};
  // Failed backend mutations: log lines and the backend-failure rule.
  BackendFailureMonitor backend_failures_{clock_};
  // Open staged-snapshot transactions, keyed by stream backend id; never
  // logged, checkpointed or visible to queries. Its own mutex; taken after
  // mutation_mu_ when both are held.
  SnapshotStaging staging_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_INDEXER_H_
