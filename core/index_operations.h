// IndexOperations: the kv_indexer.v1 calls, as the KVIndexer service and a
// replica's log follower make them (docs/contract.md). One face of the
// Indexer (core/indexer.h), which owns the state; get it with
// Indexer::operations().
//
// Each call validates its request first ("Apply validation", "Match
// validation", "GetExternalKvHitCounts", "Recovery > Replace validation",
// "Recovery > Configure validation"); a request that fails changes nothing.
// Prefix queries are the exception: they arrive validated
// ("MatchExternalKvPrefix > Order of checks"). Deadline shedding and
// admission are the server's job.
//
// The mutations (Apply, Replace, Configure) run one at a time under the
// Indexer's mutation mutex, as every other mutation does
// (core/operator_view.h, core/durable_state.h): the sequence gate's
// decision, the backend batches it causes and the worker table change
// together.
// Validation and the building of batches happen before the mutex is taken.
// Each returns a PendingAck (core/pending_ack.h): its answer, given once the
// state log is durable far enough; `.Wait()` for it. Queries never take
// the mutex; the backend gives each one snapshot.
//
// Thread safety: every method may be called concurrently.
// OWNERSHIP: a holder borrows the face; REQUIRES the object behind it (the
// Indexer) to outlive the holder. Never destroyed through the face.
#ifndef KVINDEXER_CORE_INDEX_OPERATIONS_H_
#define KVINDEXER_CORE_INDEX_OPERATIONS_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "common/fidelity_header.h"
#include "common/heartbeat_header.h"
#include "core/pending_ack.h"
#include "core/prefix_answer.h"
#include "kv_indexer.pb.h"

namespace kvindexer {

namespace v1 = ::kv_indexer::v1;

// What a mutation's sender said besides the request: the call's metadata.
// Each field is read only by the calls named; the defaults say nothing.
struct MutationOptions {
  // Apply, Replace: the sender (the gRPC peer), for duplicate-claim
  // detection ("Limits > Bounds > Duplicate claims"). Claims with equal
  // peers never conflict, so "" turns it off. A view: REQUIRES it outlives
  // the call.
  std::string_view peer = {};
  // Apply: a valid heartbeat on a request that passes validation marks the
  // worker whatever happens next ("Recovery > Worker liveness and
  // removal"); a malformed one is logged, once per worker, and ignored.
  HeartbeatHeader heartbeat = {};
  // Apply, Replace: a valid fidelity is stored on the worker's record when
  // the mutation takes effect (advisory, for the operator); a malformed one
  // is logged once per record and ignored.
  FidelityHeader fidelity = {};
  // Apply, Replace, Commit: when not null, set to whether the stream's
  // record is marked evicted by the placement bound after the call (so that its
  // bridge can be told; docs/contract.md, "Limits > The placement bound").
  // REQUIRES: it outlives the call.
  bool* evicted = nullptr;
};

class IndexOperations {
 public:
  IndexOperations(const IndexOperations&) = delete;
  IndexOperations& operator=(const IndexOperations&) = delete;

  // ApplyExternalKvBatch: the seed-era path, or the sequence gate
  // (enforce_sequence). Fills *resp when the answer is OK. A gap (G4)
  // clears the worker and answers FAILED_PRECONDITION. REQUIRES: resp !=
  // nullptr, and it and `req` stay as they are until the call returns (not
  // until Wait).
  virtual PendingAck Apply(const v1::ApplyExternalKvBatchRequest& req,
                           v1::ApplyExternalKvBatchResponse* resp,
                           const MutationOptions& options = {}) = 0;
  // ReplaceExternalKvSnapshot: the worker's whole placement and checkpoint,
  // installed by one atomic backend batch. REQUIRES: as Apply.
  virtual PendingAck Replace(const v1::ReplaceExternalKvSnapshotRequest& req,
                             v1::ReplaceExternalKvSnapshotResponse* resp,
                             const MutationOptions& options = {}) = 0;
  // ConfigureExpectedWorkers: the listed workers get records; every other
  // record is cleared and deleted. REQUIRES: as Apply.
  virtual PendingAck Configure(const v1::ConfigureExpectedWorkersRequest& req,
                               v1::ConfigureExpectedWorkersResponse* resp) = 0;
  // Configure's answer to a request that would change nothing (a bridge's
  // heartbeat), given without waiting: only when the mutation mutex is
  // free at once, the request is valid and the records already hold what
  // it lists. nullopt otherwise, with nothing changed and *resp untouched:
  // the caller then makes the ordinary Configure call, which decides it.
  // For a caller that must not block (the server's callback thread).
  // Default: always nullopt. REQUIRES: as Apply.
  virtual std::optional<PendingAck> ConfigureIfUnchanged(
      const v1::ConfigureExpectedWorkersRequest& req,
      v1::ConfigureExpectedWorkersResponse* resp) {
    (void)req;
    (void)resp;
    return std::nullopt;
  }
  // InvalidateWorker: the stream loses its placements, readiness, epoch,
  // checkpoint and generation; its record and the rest of its metadata
  // stay (docs/contract.md, "Streams > InvalidateWorker"). REQUIRES: as
  // Apply.
  virtual PendingAck Invalidate(const v1::InvalidateWorkerRequest& req,
                                v1::InvalidateWorkerResponse* resp) = 0;
  // The staged snapshot calls (docs/contract.md, "Recovery > Staged
  // snapshots"). Begin opens a transaction for a configured stream (S1 to
  // S6) and answers its id and the indexer epoch; Append stages placements
  // and is never logged; Commit installs the staged set as one Replace of
  // the stream (M1 to M5; logged); Abort ends a transaction, OK whether or
  // not its id is known. Staging is never visible to queries. REQUIRES: as
  // Apply.
  virtual PendingAck Begin(const v1::BeginExternalKvSnapshotRequest& req,
                           v1::BeginExternalKvSnapshotResponse* resp) = 0;
  virtual PendingAck Append(const v1::AppendExternalKvSnapshotRequest& req,
                            v1::AppendExternalKvSnapshotResponse* resp) = 0;
  virtual PendingAck Commit(const v1::CommitExternalKvSnapshotRequest& req,
                            v1::CommitExternalKvSnapshotResponse* resp,
                            const MutationOptions& options = {}) = 0;
  virtual PendingAck Abort(const v1::AbortExternalKvSnapshotRequest& req,
                           v1::AbortExternalKvSnapshotResponse* resp) = 0;
  // The indexer epoch (docs/contract.md, "Streams > Indexer epoch"): fixed
  // for the process's life once serving starts.
  virtual std::string IndexerEpoch() const = 0;

  [[nodiscard]] virtual absl::Status Match(
      const v1::MatchExternalKvRequest& req,
      v1::MatchExternalKvResponse* resp) = 0;
  // Scans and hands the answer to `deliver` (once, on OK) as views into the
  // query's own storage, so that a caller can encode it without building
  // the response message. It does not validate: the server validates a
  // prefix query before admitting it, so that an invalid one never takes a
  // permit. An answer larger than RequestLimits::max_prefix_answer_bytes is
  // RESOURCE_EXHAUSTED and not delivered. REQUIRES: ValidatePrefix(req).ok().
  [[nodiscard]] virtual absl::Status MatchPrefix(
      const v1::MatchExternalKvPrefixRequest& req,
      absl::FunctionRef<void(const PrefixAnswer&)> deliver) = 0;
  [[nodiscard]] virtual absl::Status HitCounts(
      const v1::GetExternalKvHitCountsRequest& req,
      v1::GetExternalKvHitCountsResponse* resp) = 0;

 protected:
  IndexOperations() = default;
  ~IndexOperations() = default;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_INDEX_OPERATIONS_H_
