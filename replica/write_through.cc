#include "replica/write_through.h"

#include <optional>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/line_a.h"
#include "core/request_validation.h"
#include "core/stream_key.h"
#include "fmt/format.h"
#include "replica/commit_capture_log.h"
#include "replica/commit_payload.h"
#include "replica/replica_refusal.h"

namespace kvindexer::replica {
namespace {

using ::kvindexer::fleet::v1::LogRecord;

constexpr std::string_view kApplyMethod =
    "/kv_indexer.v1.KVIndexer/ApplyExternalKvBatch";
constexpr std::string_view kReplaceMethod =
    "/kv_indexer.v1.KVIndexer/ReplaceExternalKvSnapshot";
constexpr std::string_view kConfigureMethod =
    "/kv_indexer.v1.KVIndexer/ConfigureExpectedWorkers";

// The kv-indexer-fidelity value that parses back to `fidelity`; "" for none.
std::string FidelityValue(const FidelityHeader& fidelity) {
  switch (fidelity.kind) {
    case FidelityHeader::Kind::kAbsent:
      return "";
    case FidelityHeader::Kind::kMalformed:
      return fidelity.value;
    case FidelityHeader::Kind::kValid:
      break;
  }
  if (fidelity.fidelity != Fidelity::kDegraded) return "exact";
  return fidelity.reason.empty() ? "degraded"
                                 : FidelityHeader::Format(fidelity.reason);
}

// The answer the Indexer gave at the record's position, into `resp`.
template <typename Response>
PendingAck Answer(absl::StatusOr<RecordResult> result, Response* resp) {
  if (!result.ok()) return PendingAck(result.status());
  if (result->outcome != RecordOutcome::kApplied) {
    return PendingAck(std::move(result->status));
  }
  if (!resp->ParseFromString(result->response)) {
    return PendingAck(absl::InternalError(
        "the replica's answer to a written-through record does not decode"));
  }
  return PendingAck(absl::OkStatus());
}

}  // namespace

WriteThrough::WriteThrough(Indexer& indexer, fleet::EventLog& log,
                           AppliedOutcomes& outcomes,
                           WriteThroughOptions options)
    : indexer_(indexer),
      ops_(indexer.operations()),
      log_(log),
      outcomes_(outcomes),
      options_(std::move(options)) {}

std::string WriteThrough::CounterDedupId() {
  return absl::StrCat(options_.producer, ":",
                      counter_.fetch_add(1, std::memory_order_relaxed) + 1);
}

std::string WriteThrough::ProducerOf(std::string_view peer) const {
  return peer.empty() ? options_.producer
                      : options_.producer + "/" + std::string(peer);
}

absl::StatusOr<RecordResult> WriteThrough::WriteAndWait(
    std::string_view filed_under, const LogRecord& record, std::string dedup_id,
    bool retry_duplicate) {
  const std::string payload = record.SerializeAsString();
  if (payload.size() > log_.max_payload_bytes()) {
    return absl::ResourceExhaustedError(fmt::format(
        "the record is {} bytes; the fleet event log takes at most {} per "
        "record",
        payload.size(), log_.max_payload_bytes()));
  }
  // Opened before the append, so that the outcome is kept however soon the
  // reader gets there.
  const AppliedOutcomes::Watch watch(outcomes_);
  if (dedup_id.empty()) dedup_id = CounterDedupId();
  absl::StatusOr<fleet::AppendAck> ack =
      log_.Append(filed_under, payload, dedup_id, std::nullopt);
  if (ack.ok() && ack->duplicate && retry_duplicate) {
    ack = log_.Append(filed_under, payload, CounterDedupId(), std::nullopt);
  }
  if (!ack.ok()) {
    if (absl::IsUnavailable(ack.status())) return ack.status();
    return absl::UnavailableError(absl::StrCat(
        "the fleet event log refused the write: ", ack.status().ToString()));
  }
  return outcomes_.WaitFor(ack->position, options_.timeout);
}

PendingAck WriteThrough::Apply(const v1::ApplyExternalKvBatchRequest& req,
                               v1::ApplyExternalKvBatchResponse* resp,
                               const MutationOptions& options) {
  if (!IsLineA(req)) return PendingAck(ReplicaRefusalStatus(kApplyMethod));
  StreamKey key;
  if (absl::Status s = ValidateApply(req, options_.limits, &key); !s.ok()) {
    return PendingAck(std::move(s));
  }
  const std::string id = EncodeStreamKey(key);
  LogRecord record;
  *record.mutable_apply() = req;
  if (options.heartbeat.kind == HeartbeatHeader::Kind::kValid) {
    record.set_heartbeat_ttl_ms(
        static_cast<uint32_t>(options.heartbeat.ttl.count()));
  }
  record.set_fidelity(FidelityValue(options.fidelity));
  record.set_producer(ProducerOf(options.peer));
  // A probe (seq 0, no actions) changes nothing and gets a counter id.
  const bool gated =
      req.enforce_sequence() && !(req.seq() == 0 && req.actions_size() == 0);
  std::string dedup_id;
  if (gated) {
    dedup_id =
        absl::StrCat(absl::BytesToHexString(id), ":",
                     absl::CHexEscape(req.worker_epoch()), ":", req.seq());
  }
  return Answer(WriteAndWait(id, record, std::move(dedup_id),
                             /*retry_duplicate=*/gated),
                resp);
}

PendingAck WriteThrough::Replace(
    const v1::ReplaceExternalKvSnapshotRequest& req,
    v1::ReplaceExternalKvSnapshotResponse* resp,
    const MutationOptions& options) {
  if (!IsLineA(req)) return PendingAck(ReplicaRefusalStatus(kReplaceMethod));
  StreamKey key;
  if (absl::Status s = ValidateReplace(req, options_.limits, &key); !s.ok()) {
    return PendingAck(std::move(s));
  }
  LogRecord record;
  *record.mutable_replace() = req;
  record.set_fidelity(FidelityValue(options.fidelity));
  record.set_producer(ProducerOf(options.peer));
  return Answer(WriteAndWait(EncodeStreamKey(key), record, "", false), resp);
}

PendingAck WriteThrough::Configure(
    const v1::ConfigureExpectedWorkersRequest& req,
    v1::ConfigureExpectedWorkersResponse* resp) {
  if (!IsLineA(req)) return PendingAck(ReplicaRefusalStatus(kConfigureMethod));
  if (absl::Status s = ValidateConfigure(req, options_.limits); !s.ok()) {
    return PendingAck(std::move(s));
  }
  // A bridge's heartbeat: a list this replica's records already hold, with
  // the index holding exactly the state at the log's end when the call
  // came, changes nothing at any position from there on, so it is answered
  // as a standalone server answers an unchanged Configure, and appends
  // nothing. Otherwise (behind the log, past records skipped without a
  // snapshot, or a log that no longer matches what was applied, such as a
  // recreated stream) it goes through the log.
  const std::optional<uint64_t> current = outcomes_.current();
  if (absl::StatusOr<fleet::LogBounds> bounds = log_.Bounds();
      current.has_value() && bounds.ok() && *current == bounds->last) {
    if (std::optional<PendingAck> ack =
            indexer_.ConfigureIfUnchangedWaiting(req, resp)) {
      return *std::move(ack);
    }
  }
  LogRecord record;
  *record.mutable_configure() = req;
  record.set_producer(options_.producer);
  return Answer(WriteAndWait(fleet::kConfigureLogKey, record, "", false), resp);
}

PendingAck WriteThrough::Invalidate(const v1::InvalidateWorkerRequest& req,
                                    v1::InvalidateWorkerResponse* resp) {
  StreamKey key;
  if (absl::Status s = ValidateInvalidate(req, options_.limits, &key);
      !s.ok()) {
    return PendingAck(std::move(s));
  }
  LogRecord record;
  *record.mutable_invalidate() = req;
  record.set_producer(options_.producer);
  return Answer(WriteAndWait(EncodeStreamKey(key), record, "", false), resp);
}

PendingAck WriteThrough::Begin(const v1::BeginExternalKvSnapshotRequest& req,
                               v1::BeginExternalKvSnapshotResponse* resp) {
  return ops_.Begin(req, resp);
}

PendingAck WriteThrough::Append(const v1::AppendExternalKvSnapshotRequest& req,
                                v1::AppendExternalKvSnapshotResponse* resp) {
  return ops_.Append(req, resp);
}

PendingAck WriteThrough::Commit(const v1::CommitExternalKvSnapshotRequest& req,
                                v1::CommitExternalKvSnapshotResponse* resp,
                                const MutationOptions& /*options*/) {
  {
    std::lock_guard<std::mutex> lock(committed_mu_);
    if (auto it = committed_.find(req.transaction_id());
        it != committed_.end()) {
      resp->set_applied_seq(it->second);
      return PendingAck(absl::OkStatus());
    }
  }
  // M1 to M5 against this replica's index as it is; the commit record the
  // Indexer builds is taken instead of installed.
  std::optional<state::v1::StagedSnapshotCommit> commit;
  {
    CommitCaptureLog::Capture capture;
    absl::Status checked = ops_.Commit(req, resp).Wait();
    if (!capture.commit.has_value()) return PendingAck(std::move(checked));
    commit = std::move(capture.commit);
  }
  LogRecord record;
  *record.mutable_snapshot_commit() = *std::move(commit);
  record.set_producer(options_.producer);
  const std::string id =
      EncodeStreamKey(StreamKeyOf(record.snapshot_commit().stream_id()));
  // Too large for one record: the placements go to the snapshot store
  // first, and the record names them.
  if (record.ByteSizeLong() > log_.max_payload_bytes() &&
      options_.payloads != nullptr) {
    absl::StatusOr<LogRecord> stored = StoreCommitPayload(
        *options_.payloads, NewPayloadId(options_.producer), record);
    if (!stored.ok()) {
      return PendingAck(absl::Status(
          stored.status().code(),
          absl::StrCat("cannot store the staged snapshot's placements beside "
                       "the fleet event log: ",
                       stored.status().message())));
    }
    record = *std::move(stored);
  }
  absl::StatusOr<RecordResult> result = WriteAndWait(
      id, record, absl::StrCat("commit:", req.transaction_id()), false);
  if (absl::IsResourceExhausted(result.status())) {
    if (IsPayloadCommit(record)) {
      (void)options_.payloads->DeletePayload(record.payload_id());
      return PendingAck(absl::ResourceExhaustedError(fmt::format(
          "this staged snapshot's commit does not fit in one fleet event log "
          "record even with its placements stored beside the log ({})",
          std::string(result.status().message()))));
    }
    return PendingAck(absl::ResourceExhaustedError(fmt::format(
        "this staged snapshot is too large for one fleet event log record "
        "({}) and this replica has no snapshot store to hold its placements",
        std::string(result.status().message()))));
  }
  // Written and decided (installed or refused where it stands in the
  // log): the transaction has done its work.
  const bool decided = result.ok();
  PendingAck answer = Answer(std::move(result), resp);
  if (decided) {
    v1::AbortExternalKvSnapshotRequest abort;
    abort.set_transaction_id(req.transaction_id());
    v1::AbortExternalKvSnapshotResponse aborted;
    (void)ops_.Abort(abort, &aborted).Wait();
    if (answer.Wait().ok()) {
      std::lock_guard<std::mutex> lock(committed_mu_);
      if (committed_.emplace(req.transaction_id(), resp->applied_seq())
              .second) {
        committed_order_.push_back(req.transaction_id());
        if (committed_order_.size() > kMaxCommitted) {
          committed_.erase(committed_order_.front());
          committed_order_.pop_front();
        }
      }
    }
  }
  return answer;
}

PendingAck WriteThrough::Abort(const v1::AbortExternalKvSnapshotRequest& req,
                               v1::AbortExternalKvSnapshotResponse* resp) {
  return ops_.Abort(req, resp);
}

std::string WriteThrough::IndexerEpoch() const { return ops_.IndexerEpoch(); }

absl::Status WriteThrough::Match(const v1::MatchExternalKvRequest& req,
                                 v1::MatchExternalKvResponse* resp) {
  return ops_.Match(req, resp);
}

absl::Status WriteThrough::MatchPrefix(
    const v1::MatchExternalKvPrefixRequest& req,
    absl::FunctionRef<void(const PrefixAnswer&)> deliver) {
  return ops_.MatchPrefix(req, deliver);
}

absl::Status WriteThrough::HitCounts(
    const v1::GetExternalKvHitCountsRequest& req,
    v1::GetExternalKvHitCountsResponse* resp) {
  return ops_.HitCounts(req, resp);
}

}  // namespace kvindexer::replica
