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
// Mutations (Apply, Replace, Configure) run one at a time under one mutex:
// the gate's decision, the backend batches it causes and the worker table
// change together, with no other mutation in between. Validation and the
// building of batches from a request happen before the mutex is taken.
// Queries never take it.
//
// Thread safety: all methods may be called concurrently; the backend provides
// the snapshot isolation for queries.
#ifndef KVINDEXER_CORE_INDEXER_H_
#define KVINDEXER_CORE_INDEXER_H_

#include <mutex>
#include <optional>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "core/prefix_answer.h"
#include "core/request_limits.h"
#include "core/sequence_gate_log.h"
#include "core/worker_sequence_table.h"
#include "kv_indexer.pb.h"
#include "kvindexer/backend.h"

namespace kvindexer {

namespace v1 = ::kv_indexer::v1;

class Indexer {
 public:
  // REQUIRES: backend (and gate_log, when given) outlive the Indexer.
  // OWNERSHIP: nothing is taken. A null gate_log means an internal one that
  // logs through spdlog. `limits` bound what clients can make the index
  // hold and serve (docs/contract.md, "Limits > Bounds").
  explicit Indexer(IndexBackend* backend, SequenceGateLog* gate_log = nullptr,
                   const RequestLimits& limits = RequestLimits{});
  Indexer(const Indexer&) = delete;
  Indexer& operator=(const Indexer&) = delete;

  // ApplyExternalKvBatch: validation, then the seed-era path or the sequence
  // gate (enforce_sequence). Fills *resp on OK. A failed validation changes
  // nothing; a gap (G4) clears the worker and returns FAILED_PRECONDITION.
  // `peer` names the sender (the gRPC peer) for duplicate-claim detection;
  // claims with equal peers never conflict, so "" turns it off.
  // REQUIRES: resp != nullptr.
  [[nodiscard]] absl::Status Apply(const v1::ApplyExternalKvBatchRequest& req,
                                   v1::ApplyExternalKvBatchResponse* resp,
                                   std::string_view peer = {});
  // ReplaceExternalKvSnapshot: the worker's whole placement and checkpoint,
  // installed by one atomic backend batch. `peer` as for Apply.
  // REQUIRES: resp != nullptr.
  [[nodiscard]] absl::Status Replace(
      const v1::ReplaceExternalKvSnapshotRequest& req,
      v1::ReplaceExternalKvSnapshotResponse* resp, std::string_view peer = {});
  // ConfigureExpectedWorkers: the listed workers get records; every other
  // record is cleared and deleted. REQUIRES: resp != nullptr.
  [[nodiscard]] absl::Status Configure(
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

  // A copy of `worker_id`'s record, or nullopt when it has none. For
  // diagnostics and tests; takes the mutation mutex.
  std::optional<WorkerRecord> WorkerState(std::string_view worker_id);

 private:
  // The gated path, from G1. REQUIRES: mutation_mu_ held; `batch` is the
  // validated request's backend form.
  absl::Status ApplyGated(const v1::ApplyExternalKvBatchRequest& req,
                          const ApplyBatchView& batch,
                          v1::ApplyExternalKvBatchResponse* resp);

  // Records the claim of a request on `record` and logs a conflict at WARN,
  // throttled per worker ("Limits > Bounds > Duplicate claims"). REQUIRES:
  // mutation_mu_ held.
  void ObserveClaim(std::string_view worker_id, WorkerRecord& record,
                    const WorkerClaim& claim);

  IndexBackend* backend_;
  const RequestLimits limits_;
  SequenceGateLog own_gate_log_;
  SequenceGateLog* gate_log_;
  // Held across every mutation; guards workers_.
  std::mutex mutation_mu_;
  WorkerSequenceTable workers_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_INDEXER_H_
