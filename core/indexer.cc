#include "core/indexer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "common/heap_trim.h"
#include "common/log_budget.h"
#include "common/log_text.h"
#include "common/uuid.h"
#include "core/backend_status.h"
#include "core/coverage_candidates.h"
#include "core/hit_count_query.h"
#include "core/line_a.h"
#include "core/match_assembler.h"
#include "core/mutation_records.h"
#include "core/prefix_query.h"
#include "core/request_batch.h"
#include "core/request_validation.h"
#include "core/sequence_gate.h"
#include "core/stream_coverage.h"
#include "core/stream_key.h"
#include "core/stream_log_fields.h"
#include "core/stream_metadata.h"
#include "core/worker_batches.h"
#include "core/worker_claims.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace kvindexer {
namespace {

// Declared before the mutation lock: its destructor runs after the lock's, so
// the heap is trimmed (once, however many workers the operation removed)
// without holding up the next mutation.
class HeapTrimAfterUnlock {
 public:
  explicit HeapTrimAfterUnlock(std::atomic<bool>* wanted) : wanted_(wanted) {}
  HeapTrimAfterUnlock(const HeapTrimAfterUnlock&) = delete;
  HeapTrimAfterUnlock& operator=(const HeapTrimAfterUnlock&) = delete;
  ~HeapTrimAfterUnlock() {
    if (wanted_->exchange(false, std::memory_order_relaxed)) {
      ReturnFreeHeapToSystem();
    }
  }

 private:
  std::atomic<bool>* wanted_;
};

// The first ABI minor with IndexBackend::RemoveWorker.
constexpr uint32_t kRemoveWorkerAbiMinor = 1;
// The first ABI minor with IndexBackend::CountPlacements.
constexpr uint32_t kCountPlacementsAbiMinor = 2;

std::optional<CacheSpec> SpecOf(bool present, const v1::WorkerCacheSpec& spec) {
  if (!present) return std::nullopt;
  return CacheSpecOf(spec);
}

bool SameSpec(const std::optional<CacheSpec>& a,
              const std::optional<CacheSpec>& b) {
  if (a.has_value() != b.has_value()) return false;
  // CacheSpec is six uint32 fields without padding (backend.h).
  return !a.has_value() || std::memcmp(&*a, &*b, sizeof(CacheSpec)) == 0;
}

}  // namespace

Indexer::Indexer(IndexBackend* backend, SequenceGateLog* gate_log,
                 const RequestLimits& limits, uint32_t backend_abi_minor,
                 const MonotonicClock* clock, WorkerLifecycleLog* lifecycle_log,
                 const StagingLimits& staging)
    : backend_(backend),
      limits_(limits),
      gate_log_(gate_log != nullptr ? gate_log : &own_gate_log_),
      backend_abi_minor_(backend_abi_minor),
      clock_(clock != nullptr ? clock : &MonotonicClock::Real()),
      lifecycle_log_(lifecycle_log != nullptr ? lifecycle_log
                                              : &own_lifecycle_log_),
      indexer_epoch_(NewRandomUuid()),
      staging_(staging, *clock_) {}

absl::Status Indexer::CheckLogOpenLocked() const {
  if (!log_closed_) return absl::OkStatus();
  return absl::UnavailableError(
      "the server is shutting down: its state log is closed");
}

PendingAck Indexer::Apply(const v1::ApplyExternalKvBatchRequest& req,
                          v1::ApplyExternalKvBatchResponse* resp,
                          const MutationOptions& options) {
  StreamKey key;
  if (absl::Status s = ValidateApply(req, limits_, &key); !s.ok()) {
    return PendingAck(std::move(s));
  }
  const std::string id = EncodeStreamKey(key);
  const RequestBatch batch(req, id);

  MutationLock lock(*this);
  absl::Status status = CheckLogOpenLocked();
  if (status.ok()) {
    status =
        req.enforce_sequence()
            ? ApplyGated(req, id, batch.view(), resp, options, Origin::kLive)
            : ApplySeedEra(req, id, batch.view(), resp, options, Origin::kLive);
  }
  if (status.ok()) {
    EnforceBoundLocked();
    if (options.evicted != nullptr) *options.evicted = EvictedLocked(id);
  }
  return AckLocked(std::move(status));
}

absl::Status Indexer::ApplySeedEra(const v1::ApplyExternalKvBatchRequest& req,
                                   std::string_view id,
                                   const ApplyBatchView& batch,
                                   v1::ApplyExternalKvBatchResponse* resp,
                                   const MutationOptions& options,
                                   Origin origin) {
  const bool live = origin == Origin::kLive;
  if (live) {
    // "Limits > Bounds": a new record must fit under max_workers.
    if (!workers_.Contains(id)) {
      if (absl::Status s = CheckNewWorkerCapacity(workers_.size(), limits_);
          !s.ok()) {
        return s;
      }
    }
    // After the capacity check, so that a refused request marks nothing; the
    // worker has or is about to get a record, so its marker is never capped.
    if (absl::Status s = NoteHeartbeat(id, options.heartbeat,
                                       /*has_record=*/true);
        !s.ok()) {
      return s;
    }
  }
  MutationLog* const log = LogFor(origin);
  uint64_t end = 0;
  if (absl::Status s = LogMutation(log, req, &end); !s.ok()) return s;
  if (absl::Status s = ToAbslStatus(ApplyToBackend(batch)); !s.ok()) {
    TakeBack(log, end);
    return s;
  }
  WorkerRecord& record = workers_.FindOrAdd(id);
  if (live) {
    ObserveClaim(
        id, record.claims,
        WorkerClaim{options.peer, req.worker_address(), req.worker_epoch()});
  }
  record.address = req.worker_address();
  record.spec = SpecOf(req.has_cache_spec(), req.cache_spec());
  record.ready = true;
  MergeStreamMetadata(MetadataUpdate{.generation = &req.worker_generation()},
                      &record.meta);
  NoteTookEffect(id, record, options.fidelity, origin);
  resp->set_applied_seq(req.seq());
  resp->set_duplicate(false);
  return absl::OkStatus();
}

absl::Status Indexer::ApplyGated(const v1::ApplyExternalKvBatchRequest& req,
                                 std::string_view id,
                                 const ApplyBatchView& batch,
                                 v1::ApplyExternalKvBatchResponse* resp,
                                 const MutationOptions& options,
                                 Origin origin) {
  const bool live = origin == Origin::kLive;
  MutationLog* const log = LogFor(origin);
  // Read only: a refused or duplicate apply changes nothing the directory
  // shows, so the record is looked up again to be changed.
  const WorkerRecord* record = workers_.Find(id);
  if (live) {
    // Whatever the gate decides next (docs/contract.md, "Recovery > Worker
    // liveness and removal").
    if (absl::Status s =
            NoteHeartbeat(id, options.heartbeat, record != nullptr);
        !s.ok()) {
      return s;
    }
    // A gated apply never creates a record (G1); every one that finds a
    // record is a claim on it, refused or not.
    if (record != nullptr) {
      ObserveClaim(
          id, *workers_.FindClaims(id),
          WorkerClaim{options.peer, req.worker_address(), req.worker_epoch()});
    }
  }
  // A line-A apply also needs a configured record (G1) and its generation
  // (G2; docs/contract.md, "Streams > Where line A differs").
  const GateDecision decision =
      DecideGate(record, req.worker_epoch(), req.seq(),
                 IsLineA(req) ? &req.worker_generation() : nullptr);
  // Replayed, a refusal is what the record did when it was logged.
  const auto refuse = [&] {
    return live ? GateRefusal(decision, req.seq()) : absl::OkStatus();
  };
  switch (decision.step) {
    case GateStep::kUnconfigured:
      if (live) gate_log_->RecordUnconfigured(id);
      return refuse();
    case GateStep::kNotReady:
      if (live) gate_log_->RecordNotReady(id, req.worker_epoch());
      return refuse();
    case GateStep::kDuplicate:
      // Acknowledged; nothing is applied and the record is not refreshed.
      resp->set_applied_seq(decision.checkpoint);
      resp->set_duplicate(true);
      return absl::OkStatus();
    case GateStep::kGap: {
      // Logged as the request itself: replayed, it meets the same gap.
      uint64_t end = 0;
      if (absl::Status s = LogMutation(log, req, &end); !s.ok()) return s;
      // Every placement of the worker goes in one atomic batch; the
      // backend's record keeps the stored address and spec.
      const RecordBatch clear(id, *record,
                              RecordBatch::Actions::kClearAllTiers);
      if (absl::Status s = ToAbslStatus(ApplyToBackend(clear.view()));
          !s.ok()) {
        TakeBack(log, end);
        return s;
      }
      WorkerRecord& cleared = *workers_.FindToChange(id);
      cleared.ready = false;
      cleared.checkpoint.reset();
      cleared.evicted = false;
      // The clear took effect; what the bridge said of a feed with a gap
      // is not kept.
      NoteTookEffect(id, cleared, FidelityHeader{}, origin);
      if (live) gate_log_->RecordGap(id, decision.expected, req.seq());
      return refuse();
    }
    case GateStep::kAccept:
      break;
  }
  uint64_t end = 0;
  if (absl::Status s = LogMutation(log, req, &end); !s.ok()) return s;
  if (absl::Status s = ToAbslStatus(ApplyToBackend(batch)); !s.ok()) {
    TakeBack(log, end);
    return s;
  }
  WorkerRecord& accepted = *workers_.FindToChange(id);
  accepted.address = req.worker_address();
  accepted.spec = SpecOf(req.has_cache_spec(), req.cache_spec());
  accepted.ready = true;
  accepted.checkpoint = SequenceCheckpoint{req.worker_epoch(), req.seq()};
  MergeStreamMetadata(MetadataUpdate{.generation = &req.worker_generation()},
                      &accepted.meta);
  NoteTookEffect(id, accepted, options.fidelity, origin);
  resp->set_applied_seq(req.seq());
  resp->set_duplicate(false);
  return absl::OkStatus();
}

PendingAck Indexer::Replace(const v1::ReplaceExternalKvSnapshotRequest& req,
                            v1::ReplaceExternalKvSnapshotResponse* resp,
                            const MutationOptions& options) {
  StreamKey key;
  if (absl::Status s = ValidateReplace(req, limits_, &key); !s.ok()) {
    return PendingAck(std::move(s));
  }
  const std::string id = EncodeStreamKey(key);
  const SnapshotBatch batch(req, id);

  MutationLock lock(*this);
  absl::Status status = CheckLogOpenLocked();
  if (status.ok()) {
    status = ReplaceLocked(req, id, batch.view(), resp, options, Origin::kLive);
  }
  if (status.ok()) {
    EnforceBoundLocked();
    if (options.evicted != nullptr) *options.evicted = EvictedLocked(id);
  }
  return AckLocked(std::move(status));
}

absl::Status Indexer::ReplaceLocked(
    const v1::ReplaceExternalKvSnapshotRequest& req, std::string_view id,
    const ApplyBatchView& batch, v1::ReplaceExternalKvSnapshotResponse* resp,
    const MutationOptions& options, Origin origin) {
  const bool live = origin == Origin::kLive;
  // A refused install changes nothing the directory shows: the record is
  // looked up to be changed only once the install took effect.
  // V4; a line-A install needs a configured record.
  const WorkerRecord* found = workers_.Find(id);
  if (found == nullptr || (IsLineA(req) && !found->configured)) {
    if (!live) return absl::OkStatus();
    return absl::FailedPreconditionError(
        "stream must be configured before snapshot replacement");
  }
  WorkerClaims* const claims = workers_.FindClaims(id);
  if (live) {
    ObserveClaim(
        id, *claims,
        WorkerClaim{options.peer, req.worker_address(), req.worker_epoch()});
  }
  MutationLog* const log = LogFor(origin);
  uint64_t end = 0;
  if (absl::Status s = LogMutation(log, req, &end); !s.ok()) return s;
  if (absl::Status s = ToAbslStatus(ApplyToBackend(batch)); !s.ok()) {
    TakeBack(log, end);
    return s;
  }
  WorkerRecord& record = *workers_.FindToChange(id);
  record.address = req.worker_address();
  record.spec = SpecOf(req.has_cache_spec(), req.cache_spec());
  record.ready = true;
  record.checkpoint = SequenceCheckpoint{req.worker_epoch(), req.applied_seq()};
  record.evicted = false;
  MergeStreamMetadata(MetadataUpdate{.generation = &req.worker_generation()},
                      &record.meta);
  NoteTookEffect(id, record, options.fidelity, origin);
  resp->set_applied_seq(req.applied_seq());
  return absl::OkStatus();
}

PendingAck Indexer::Configure(const v1::ConfigureExpectedWorkersRequest& req,
                              v1::ConfigureExpectedWorkersResponse* resp) {
  std::vector<StreamKey> keys;
  if (absl::Status s = ValidateConfigure(req, limits_, &keys); !s.ok()) {
    return PendingAck(std::move(s));
  }
  const ListedStreams listed(keys);

  const HeapTrimAfterUnlock trim(&trim_wanted_);
  MutationLock lock(*this);
  absl::Status status = CheckLogOpenLocked();
  if (status.ok()) status = ConfigureLocked(req, listed, resp, Origin::kLive);
  if (status.ok() && IsLineA(req)) resp->set_indexer_epoch(indexer_epoch_);
  return AckLocked(std::move(status));
}

std::optional<PendingAck> Indexer::ConfigureIfUnchanged(
    const v1::ConfigureExpectedWorkersRequest& req,
    v1::ConfigureExpectedWorkersResponse* resp) {
  return ConfigureIfUnchangedImpl(req, resp, /*wait=*/false);
}

std::optional<PendingAck> Indexer::ConfigureIfUnchangedWaiting(
    const v1::ConfigureExpectedWorkersRequest& req,
    v1::ConfigureExpectedWorkersResponse* resp) {
  return ConfigureIfUnchangedImpl(req, resp, /*wait=*/true);
}

std::optional<PendingAck> Indexer::ConfigureIfUnchangedImpl(
    const v1::ConfigureExpectedWorkersRequest& req,
    v1::ConfigureExpectedWorkersResponse* resp, bool wait) {
  std::vector<StreamKey> keys;
  if (!ValidateConfigure(req, limits_, &keys).ok()) return std::nullopt;
  const ListedStreams listed(keys);
  // Not MutationLock: nothing changes here, so nothing is published.
  std::unique_lock<std::mutex> lock(mutation_mu_, std::defer_lock);
  if (wait) {
    lock.lock();
  } else {
    (void)lock.try_lock();
  }
  if (!lock.owns_lock() || !CheckLogOpenLocked().ok() ||
      !ConfigureChangesNothingLocked(req, listed)) {
    return std::nullopt;
  }
  FillUnchangedConfigureLocked(resp);
  if (IsLineA(req)) resp->set_indexer_epoch(indexer_epoch_);
  return AckLocked(absl::OkStatus());
}

void Indexer::FillUnchangedConfigureLocked(
    v1::ConfigureExpectedWorkersResponse* resp) const {
  // The directory holds every earlier mutation's result (each publishes
  // before releasing the lock), so its counts are current and O(1).
  resp->set_total_workers(static_cast<uint32_t>(workers_.size()));
  resp->set_ready_workers(static_cast<uint32_t>(directory_.counts().covered));
}

Indexer::ListedStreams::ListedStreams(const std::vector<StreamKey>& keys) {
  ids.reserve(keys.size());
  for (const StreamKey& key : keys) ids.push_back(EncodeStreamKey(key));
  set.reserve(ids.size());
  for (const std::string& id : ids) set.insert(id);
}

namespace {

// What an entry says about its stream's metadata.
MetadataUpdate UpdateOf(const v1::ExpectedWorker& worker) {
  return MetadataUpdate{.generation = &worker.worker_generation(),
                        .model = &worker.model(),
                        .hash_schema_version = worker.hash_schema_version(),
                        .page_size = worker.page_size(),
                        .is_bigram = worker.is_bigram()};
}

}  // namespace

bool Indexer::ConfigureChangesNothingLocked(
    const v1::ConfigureExpectedWorkersRequest& req,
    const ListedStreams& listed) const {
  const WorkerSequenceTable& table = workers_;
  // With every listed worker found below, equal sizes leave no record
  // unlisted: nothing to remove.
  if (table.size() != listed.set.size()) return false;
  for (int i = 0; i < req.workers_size(); ++i) {
    const v1::ExpectedWorker& worker = req.workers(i);
    const WorkerRecord* record = table.Find(listed.ids[static_cast<size_t>(i)]);
    if (record == nullptr || !record->configured ||
        record->address != worker.worker_address()) {
      return false;
    }
    if (worker.has_cache_spec() &&
        !SameSpec(CacheSpecOf(worker.cache_spec()), record->spec)) {
      return false;
    }
    StreamMetadata meta = record->meta;
    if (MergeStreamMetadata(UpdateOf(worker), &meta)) return false;
  }
  return true;
}

absl::Status Indexer::ConfigureLocked(
    const v1::ConfigureExpectedWorkersRequest& req, const ListedStreams& listed,
    v1::ConfigureExpectedWorkersResponse* resp, Origin origin) {
  // A configuration the records already hold (a bridge that sends its list
  // every second as a heartbeat) is answered like a probe: nothing is
  // logged, the backend is not called and no record is touched, not even
  // its last_apply (docs/durability.md, "What is logged").
  if (ConfigureChangesNothingLocked(req, listed)) {
    FillUnchangedConfigureLocked(resp);
    return absl::OkStatus();
  }
  // Each step below changes the backend first, then the table, so that a
  // backend failure part way leaves the two agreeing (the steps already
  // taken stay taken).
  //
  // 1. Workers not listed are removed: placements, records and markers.
  // Each removal is logged as a record of its own (WorkerRemoval) and taken
  // back when the backend refuses it, so that the log holds exactly the
  // removals that took effect, however far this step got.
  for (const std::string& id : workers_.WorkerIds()) {
    if (listed.set.contains(id)) continue;
    if (absl::Status s =
            RemoveWorkerLocked(id, RemovalReason::kConfigure, origin);
        !s.ok()) {
      return s;
    }
  }
  // Then the configuration itself; replayed, its step 1 finds nothing left
  // to remove. When a backend refresh below fails part way the record stays:
  // replay completes the remaining steps (addresses and specs of listed
  // workers, records of new ones), which a client that saw the failure
  // sends again anyway.
  uint64_t end = 0;
  if (absl::Status s = LogMutation(LogFor(origin), req, &end); !s.ok()) {
    return s;
  }
  // 2. and 3. Listed workers: a fresh record when there is none; address
  // always, spec only when given, metadata by the keep rule. Sequence state
  // and placement stay as they are.
  for (int i = 0; i < req.workers_size(); ++i) {
    const v1::ExpectedWorker& worker = req.workers(i);
    const std::string& id = listed.ids[static_cast<size_t>(i)];
    bool created = false;
    WorkerRecord& record = workers_.FindOrAdd(id, &created);
    WorkerRecord updated = record;
    updated.configured = true;
    updated.address = worker.worker_address();
    if (worker.has_cache_spec())
      updated.spec = CacheSpecOf(worker.cache_spec());
    MergeStreamMetadata(UpdateOf(worker), &updated.meta);
    // A ready worker may hold placements, whose queries show the backend's
    // copy of address and spec: refresh it when they change.
    const bool changed = updated.address != record.address ||
                         !SameSpec(updated.spec, record.spec);
    if (!created && record.ready && changed) {
      const RecordBatch refresh(id, updated, RecordBatch::Actions::kNone);
      if (absl::Status s = ToAbslStatus(ApplyToBackend(refresh.view()));
          !s.ok()) {
        return s;
      }
    }
    record = std::move(updated);
    NoteTookEffect(id, record, FidelityHeader{}, origin);
  }
  resp->set_total_workers(static_cast<uint32_t>(workers_.size()));
  resp->set_ready_workers(static_cast<uint32_t>(workers_.covered_count()));
  return absl::OkStatus();
}

PendingAck Indexer::Invalidate(const v1::InvalidateWorkerRequest& req,
                               v1::InvalidateWorkerResponse* resp) {
  StreamKey key;
  if (absl::Status s = ValidateInvalidate(req, limits_, &key); !s.ok()) {
    return PendingAck(std::move(s));
  }
  const std::string id = EncodeStreamKey(key);
  MutationLock lock(*this);
  absl::Status status = CheckLogOpenLocked();
  if (status.ok()) status = InvalidateLocked(req, id, Origin::kLive);
  if (status.ok()) {
    resp->set_total_workers(static_cast<uint32_t>(workers_.size()));
    resp->set_ready_workers(static_cast<uint32_t>(workers_.covered_count()));
    resp->set_indexer_epoch(indexer_epoch_);
  }
  return AckLocked(std::move(status));
}

absl::Status Indexer::InvalidateLocked(const v1::InvalidateWorkerRequest& req,
                                       std::string_view id, Origin origin) {
  const bool live = origin == Origin::kLive;
  const WorkerRecord* found = workers_.Find(id);
  if (found == nullptr || !found->configured) {
    if (!live) return absl::OkStatus();
    return absl::NotFoundError(
        fmt::format("stream {} is not configured",
                    LogText(StreamKeyText(DecodeStreamKey(id)))));
  }
  // Not ready (so holding no placement), no generation, nothing staged:
  // nothing to change, nothing to log.
  if (!found->ready && found->meta.generation.empty() &&
      !found->checkpoint.has_value() &&
      !staging_.StagedPlacements(id).has_value()) {
    return absl::OkStatus();
  }
  MutationLog* const log = LogFor(origin);
  uint64_t end = 0;
  if (absl::Status s = LogMutation(log, req, &end); !s.ok()) return s;
  WorkerRecord* record = workers_.FindToChange(id);
  if (record->ready) {
    // Every placement goes in one atomic batch, as a gap clears them.
    const RecordBatch clear(id, *record, RecordBatch::Actions::kClearAllTiers);
    if (absl::Status s = ToAbslStatus(ApplyToBackend(clear.view())); !s.ok()) {
      TakeBack(log, end);
      return s;
    }
  }
  record->ready = false;
  record->checkpoint.reset();
  record->evicted = false;
  record->meta.generation.clear();
  staging_.Cancel(id);
  NoteTookEffect(id, *record, FidelityHeader{}, origin);
  return absl::OkStatus();
}

BackendStatus Indexer::ApplyToBackend(const ApplyBatchView& batch) {
  BackendStatus status = backend_->Apply(batch);
  if (status.code != BackendCode::kOk) {
    backend_failures_.Record(
        BackendMutation::kApply,
        std::string_view(batch.worker_id.data, batch.worker_id.size), status);
  }
  return status;
}

absl::Status Indexer::Match(const v1::MatchExternalKvRequest& req,
                            v1::MatchExternalKvResponse* resp) {
  if (absl::Status s = ValidateMatch(req); !s.ok()) return s;
  return RunMatch(backend_, req, resp);
}

absl::Status Indexer::MatchPrefix(
    const v1::MatchExternalKvPrefixRequest& req,
    absl::FunctionRef<void(const PrefixAnswer&)> deliver) {
  if (!IsLineA(req)) {
    return RunPrefixQuery(backend_, req, limits_.max_prefix_answer_bytes,
                          deliver);
  }
  // Coverage and candidates come from one view of the records, taken
  // before the backend's snapshot.
  thread_local CoverageSelection selection;
  coverage_.Select(req, &selection);
  thread_local CoverageCandidates candidates;
  candidates.Build(selection);
  return RunPrefixQuery(backend_, req, limits_.max_prefix_answer_bytes, deliver,
                        &candidates.streams());
}

absl::Status Indexer::HitCounts(const v1::GetExternalKvHitCountsRequest& req,
                                v1::GetExternalKvHitCountsResponse* resp) {
  if (absl::Status s = ValidateHitCounts(req); !s.ok()) return s;
  return RunHitCounts(backend_, req, resp);
}

void Indexer::ObserveClaim(std::string_view worker_id, WorkerClaims& claims,
                           const WorkerClaim& claim) {
  const std::optional<ClaimConflict> conflict =
      claims.Observe(claim, std::chrono::steady_clock::now());
  if (conflict.has_value() && conflict->log) {
    LogPerWorkerLine(spdlog::level::warn,
                     ClaimConflictLine(worker_id, claim, *conflict));
  }
}

// --- Worker liveness and removal (docs/contract.md, "Recovery > Worker
// liveness and removal") ---

absl::Status Indexer::NoteHeartbeat(std::string_view worker_id,
                                    const HeartbeatHeader& heartbeat,
                                    bool has_record) {
  switch (heartbeat.kind) {
    case HeartbeatHeader::Kind::kAbsent:
      return absl::OkStatus();
    case HeartbeatHeader::Kind::kValid: {
      // A worker without a record may be marked too (its bridge beats before
      // it registers again), but such markers must not grow without bound:
      // a new one is taken only while there are fewer markers than
      // max_workers. Workers with a record are always marked, so the table
      // holds at most twice max_workers ("Limits > Bounds").
      if (!has_record && !liveness_.IsMarked(worker_id) &&
          liveness_.marker_count() >= limits_.max_workers) {
        return absl::OkStatus();
      }
      // Deadlines are not durable (docs/durability.md): only a marker that
      // appears or changes its TTL has something to log.
      if (log_ != nullptr && liveness_.Ttl(worker_id) != heartbeat.ttl) {
        uint64_t end = 0;
        if (absl::Status s = LogMarker(log_, worker_id, heartbeat.ttl, &end);
            !s.ok()) {
          return s;
        }
      }
      workers_.Touch(worker_id);
      liveness_.Heartbeat(worker_id, clock_->Now(), heartbeat.ttl);
      return absl::OkStatus();
    }
    case HeartbeatHeader::Kind::kMalformed:
      if (liveness_.NoteMalformed(worker_id)) {
        lifecycle_log_->RecordMalformedHeartbeat(worker_id, heartbeat.value);
      }
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

absl::Status Indexer::DropFromBackend(std::string_view worker_id,
                                      const WorkerRecord& record,
                                      RemovalReason reason) {
  BackendStatus status{BackendCode::kOk, {}};
  if (backend_abi_minor_ >= kRemoveWorkerAbiMinor) {
    uint32_t existed = 0;
    status = backend_->RemoveWorker(
        StringView{worker_id.data(), worker_id.size()}, &existed);
    // The backend freed the worker's memory; without a trim glibc would keep
    // it and the resident size would not come down. One trim per operation,
    // after the mutex is released (HeapTrimAfterUnlock).
    if (status.code == BackendCode::kOk && existed != 0) trim_wanted_ = true;
  } else if (record.ready) {
    // ABI 1.0: the placements go in one batch; the backend keeps its record,
    // with the stored address and spec.
    const RecordBatch clear(worker_id, record,
                            RecordBatch::Actions::kClearAllTiers);
    status = backend_->Apply(clear.view());
  }
  if (status.code == BackendCode::kOk) return absl::OkStatus();
  // Logged below, unthrottled: a removal fails rarely (one sweep retries it
  // per period).
  backend_failures_.Record(backend_abi_minor_ >= kRemoveWorkerAbiMinor
                               ? BackendMutation::kRemoveWorker
                               : BackendMutation::kApply,
                           worker_id, status, /*logged=*/true);
  const absl::Status failure = ToAbslStatus(status);
  // Debian's abseil has its own string_view type, not std::string_view.
  const std::string_view error(failure.message().data(),
                               failure.message().size());
  lifecycle_log_->RecordRemovalFailure(worker_id, reason, error);
  return absl::InternalError(
      fmt::format("cannot remove {} from the index backend: {}",
                  IsEncodedStreamKey(worker_id)
                      ? "stream " + StreamKeyText(DecodeStreamKey(worker_id))
                      : "worker " + std::string(worker_id),
                  error));
}

absl::Status Indexer::RemoveLocked(std::string_view worker_id,
                                   RemovalReason reason) {
  const WorkerRecord& record = *workers_.Find(worker_id);
  if (absl::Status s = DropFromBackend(worker_id, record, reason); !s.ok()) {
    return s;
  }
  workers_.Erase(worker_id);
  workers_.Touch(worker_id);
  liveness_.Unmark(worker_id);
  staging_.Cancel(worker_id);
  return absl::OkStatus();
}

absl::Status Indexer::RemoveWorker(std::string_view worker_id,
                                   RemovalReason reason) {
  const HeapTrimAfterUnlock trim(&trim_wanted_);
  PendingAck ack;
  {
    MutationLock lock(*this);
    absl::Status status = CheckLogOpenLocked();
    if (status.ok()) {
      status = RemoveWorkerLocked(worker_id, reason, Origin::kLive);
    }
    ack = AckLocked(std::move(status));
  }
  return ack.Wait();
}

absl::Status Indexer::RemoveWorkerLocked(std::string_view worker_id,
                                         RemovalReason reason, Origin origin) {
  const bool live = origin == Origin::kLive;
  MutationLog* const log = LogFor(origin);
  uint64_t end = 0;
  if (!workers_.Contains(worker_id)) {
    // The marker goes all the same. Dropping one is a change like any
    // other: logged, or a restart would bring the marker back.
    if (liveness_.IsMarked(worker_id)) {
      if (absl::Status s = LogRemoval(log, worker_id, reason, &end); !s.ok()) {
        return s;
      }
      workers_.Touch(worker_id);
      liveness_.Unmark(worker_id);
    }
    if (!live) return absl::OkStatus();
    // A stream is named by its fields, never by its encoded id.
    return absl::NotFoundError(
        IsEncodedStreamKey(worker_id)
            ? fmt::format("stream {} has no record",
                          StreamKeyText(DecodeStreamKey(worker_id)))
            : fmt::format("worker {} has no record", worker_id));
  }
  if (absl::Status s = LogRemoval(log, worker_id, reason, &end); !s.ok()) {
    return s;
  }
  if (absl::Status s = RemoveLocked(worker_id, reason); !s.ok()) {
    TakeBack(log, end);
    return s;
  }
  if (live) lifecycle_log_->RecordRemoved(worker_id, reason);
  return absl::OkStatus();
}

absl::Status Indexer::ClearExpired(const LivenessTable::Expired& expired,
                                   bool* cleared, Origin origin) {
  const std::string& id = expired.worker_id;
  const WorkerRecord* record = workers_.Find(id);
  // A worker that is not ready holds nothing: clearing it changes no
  // placement, and is neither logged nor counted.
  const bool held = record->ready;
  // Fleet membership is the configurer's decision: a configured worker
  // keeps its record. One that registered itself goes, so that a fleet that
  // churns worker ids does not grow.
  const bool keep_record = record->configured;
  if (absl::Status s = DropFromBackend(id, *record, RemovalReason::kLiveness);
      !s.ok()) {
    return s;
  }
  if (keep_record) {
    WorkerRecord& kept = *workers_.FindToChange(id);
    kept.ready = false;
    kept.checkpoint.reset();
    kept.evicted = false;
    NoteTookEffect(id, kept, FidelityHeader{}, origin);
  } else {
    workers_.Erase(id);
    staging_.Cancel(id);
  }
  workers_.Touch(id);
  liveness_.Unmark(id);
  *cleared = held;
  if (origin != Origin::kLive) return absl::OkStatus();
  if (held) {
    liveness_.CountCleared();
    lifecycle_log_->RecordExpired(id, expired.silent_for, keep_record);
  } else if (!keep_record) {
    lifecycle_log_->RecordRemoved(id, RemovalReason::kLiveness);
  }
  return absl::OkStatus();
}

void Indexer::RearmHeartbeatMarkers(MonotonicClock::TimePoint now) {
  MutationLock lock(*this);
  for (const LivenessTable::MarkerTtl& marker : liveness_.MarkerTtls()) {
    workers_.Touch(marker.worker_id);
    liveness_.Rearm(marker.worker_id, now, marker.ttl);
  }
}

OperatorView::SweepResult Indexer::SweepLiveness(
    MonotonicClock::TimePoint now) {
  const HeapTrimAfterUnlock trim(&trim_wanted_);
  SweepResult result;
  PendingAck ack;
  {
    MutationLock lock(*this);
    if (absl::Status closed = CheckLogOpenLocked(); !closed.ok()) {
      result.status = std::move(closed);
      return result;
    }
    result = SweepLocked(now);
    ack = AckLocked(absl::OkStatus());
  }
  // The clears this sweep logged are acknowledged like any mutation.
  if (absl::Status durable = ack.Wait(); result.status.ok()) {
    result.status = std::move(durable);
  }
  return result;
}

OperatorView::SweepResult Indexer::SweepLocked(MonotonicClock::TimePoint now) {
  MutationLog* const log = log_;
  SweepResult result;
  // The first append that fails ends the sweep's logging: every change
  // still to make waits for the next sweep, unmade.
  absl::Status log_failure;
  const LivenessTable::SweepPlan plan = liveness_.PlanSweep(
      now, [this](std::string_view id) { return workers_.Contains(id); },
      [&](std::string_view id) {
        // An expired marker of a worker without a record is dropped; logged
        // as a liveness clear, which for such a worker drops the marker.
        if (!log_failure.ok()) return false;
        uint64_t end = 0;
        log_failure = LogLivenessClear(log, id, &end);
        return log_failure.ok();
      });
  result.census = plan.census;
  result.refused = plan.refused;
  result.status = log_failure;
  if (plan.refused) {
    lifecycle_log_->RecordRefusal(plan.census);
    return result;
  }
  lifecycle_log_->EndRefusals();
  if (!log_failure.ok()) return result;
  for (const LivenessTable::Expired& expired : plan.to_clear) {
    uint64_t end = 0;
    if (absl::Status s = LogLivenessClear(log, expired.worker_id, &end);
        !s.ok()) {
      if (result.status.ok()) result.status = std::move(s);
      break;
    }
    bool cleared = false;
    if (absl::Status s = ClearExpired(expired, &cleared, Origin::kLive);
        !s.ok()) {
      TakeBack(log, end);
      // The worker stays as it was, marked: the next sweep tries again.
      liveness_.CountClearFailure();
      if (result.status.ok()) result.status = std::move(s);
      continue;
    }
    if (cleared) ++result.cleared;
  }
  return result;
}

std::optional<MonotonicClock::TimePoint> Indexer::HeartbeatDeadline(
    std::string_view worker_id) {
  MutationLock lock(*this);
  return liveness_.Deadline(worker_id);
}

std::optional<WorkerRecord> Indexer::WorkerState(std::string_view worker_id) {
  MutationLock lock(*this);
  const WorkerRecord* record = workers_.Find(worker_id);
  if (record == nullptr) return std::nullopt;
  return *record;
}

void Indexer::NoteTookEffect(std::string_view worker_id, WorkerRecord& record,
                             const FidelityHeader& fidelity, Origin origin) {
  if (origin != Origin::kLive) return;
  record.last_apply = clock_->Now();
  switch (fidelity.kind) {
    case FidelityHeader::Kind::kAbsent:
      return;
    case FidelityHeader::Kind::kValid:
      record.fidelity = fidelity.fidelity;
      record.fidelity_reason = fidelity.reason;
      return;
    case FidelityHeader::Kind::kMalformed:
      // Once per record: a bridge that sends a bad value sends it on every
      // batch. A client cycling through worker ids gets a record each, so
      // the line also draws on the per-worker budget (common/log_budget.h).
      if (!record.fidelity_malformed_logged) {
        record.fidelity_malformed_logged = true;
        LogPerWorkerLine(
            spdlog::level::warn,
            fmt::format(
                "ignoring malformed {} metadata (advisory; want \"exact\" or "
                "\"degraded; <reason>\") {} value=\"{}\"",
                kFidelityHeader, StreamLogFields(worker_id),
                LogText(fidelity.value)));
      }
      return;
  }
}

WorkerSnapshot Indexer::SnapshotLocked(const std::string& worker_id,
                                       const WorkerRecord& record) const {
  WorkerSnapshot w;
  w.worker_id = worker_id;
  w.address = record.address;
  w.spec = record.spec;
  w.sequence_state = record.state();
  w.ready = record.ready;
  w.configured = record.configured;
  w.checkpoint = record.checkpoint;
  w.last_apply = record.last_apply;
  w.fidelity = record.fidelity;
  w.fidelity_reason = record.fidelity_reason;
  // An eviction says more than the bridge can: the index itself dropped
  // placements the worker holds.
  if (record.evicted) {
    w.fidelity = Fidelity::kDegraded;
    w.fidelity_reason = "evicted";
  }
  w.evicted = record.evicted;
  w.evicted_placements = record.evicted_placements;
  w.meta = record.meta;
  w.covered = record.covered();
  w.heartbeat_ttl = liveness_.Ttl(worker_id);
  w.last_heartbeat = liveness_.LastHeartbeat(worker_id);
  w.heartbeat_deadline = liveness_.Deadline(worker_id);
  return w;
}

void Indexer::PublishChangedLocked() {
  RefreshTallyLocked(nullptr);
  tally_counted_ = 0;
  std::vector<std::string> changed = workers_.TakeChanged();
  if (changed.empty()) return;
  std::vector<WorkerSnapshot> snapshots;
  std::vector<CoveredStream> streams;
  std::vector<std::string> erased;
  const WorkerSequenceTable& table = workers_;
  for (std::string& id : changed) {
    if (const WorkerRecord* record = table.Find(id); record != nullptr) {
      snapshots.push_back(SnapshotLocked(id, *record));
      streams.push_back(CoveredStream{
          .backend_id = id,
          .key = DecodeStreamKey(id),
          .address = record->address,
          .covered = record->covered(),
          .epoch = record->checkpoint ? record->checkpoint->epoch : "",
          .watermark = record->checkpoint ? record->checkpoint->seq : 0,
          .generation = record->meta.generation});
    } else {
      erased.push_back(std::move(id));
    }
  }
  coverage_.Publish(std::move(streams), erased);
  directory_.Publish(std::move(snapshots), erased);
}

std::vector<WorkerSnapshot> Indexer::ListWorkers(bool placement_counts) {
  // Pages of this size hold up a publishing mutation for well under a
  // millisecond.
  constexpr size_t kPage = 1024;
  std::vector<WorkerSnapshot> out;
  for (;;) {
    const std::string after = out.empty() ? "" : out.back().worker_id;
    std::vector<WorkerSnapshot> page =
        ListWorkersPage(after, kPage, placement_counts);
    const bool more = page.size() == kPage;
    out.insert(out.end(), std::make_move_iterator(page.begin()),
               std::make_move_iterator(page.end()));
    if (!more) return out;
  }
}

std::vector<WorkerSnapshot> Indexer::ListWorkersPage(std::string_view after,
                                                     size_t limit,
                                                     bool placement_counts) {
  std::vector<WorkerSnapshot> page = directory_.Page(after, limit);
  // Off every lock: a count may wait for a backend writer.
  if (placement_counts) {
    for (WorkerSnapshot& w : page) {
      w.placements_by_tier = PlacementCounts(w.worker_id);
    }
  }
  return page;
}

std::optional<WorkerSnapshot> Indexer::DescribeWorker(
    std::string_view worker_id) {
  return directory_.Find(worker_id);
}

std::optional<std::array<uint64_t, kMaxTier + 1>> Indexer::PlacementCounts(
    std::string_view worker_id) {
  if (backend_abi_minor_ < kCountPlacementsAbiMinor) return std::nullopt;
  std::array<uint64_t, kMaxTier + 1> counts{};
  const BackendStatus status = backend_->CountPlacements(
      StringView{worker_id.data(), worker_id.size()}, counts.data(), nullptr);
  if (status.code != BackendCode::kOk) return std::nullopt;
  counts[0] = 0;
  return counts;
}

BackendStats Indexer::ReadBackendStats() {
  BackendStats stats{};
  stats.struct_size = sizeof(BackendStats);
  backend_->GetStats(&stats);
  return stats;
}

absl::Status Indexer::ExplainPrefix(
    const v1::MatchExternalKvPrefixRequest& req,
    const std::vector<std::string>& named_workers, PrefixExplanation* out) {
  // The selection of MatchPrefix, taken the same way.
  CoverageSelection selection;
  CoverageCandidates candidates;
  if (IsLineA(req)) {
    coverage_.Select(req, &selection);
    candidates.Build(selection);
  }
  return kvindexer::ExplainPrefix(
      backend_, req, named_workers,
      [this](std::string_view id) -> std::optional<KnownWorker> {
        std::optional<WorkerSnapshot> w = DescribeWorker(id);
        if (!w.has_value()) return std::nullopt;
        return KnownWorker{std::move(w->address), w->spec};
      },
      out, IsLineA(req) ? &candidates.streams() : nullptr);
}

}  // namespace kvindexer
