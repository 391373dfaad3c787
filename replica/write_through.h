// WriteThrough: a replica's answer to the line-A writes (docs/fleet.md,
// "Writes through a replica"). The gRPC service of a replica serves its
// mutations through this face of IndexOperations instead of the Indexer's:
//
//   - a line-A ApplyExternalKvBatch, ReplaceExternalKvSnapshot or
//     ConfigureExpectedWorkers (core/line_a.h), every InvalidateWorker and
//     every CommitExternalKvSnapshot is validated as the Indexer validates
//     it, appended to the fleet event log as a record of the matching kind
//     (replica/record_applier.h says where each is filed), and answered,
//     once this replica's own reader has applied that position, with the
//     outcome and response its Indexer produced there; UNAVAILABLE when
//     that takes longer than `timeout` or the log refuses the append;
//   - Begin, Append and Abort stay local: the transaction lives in this
//     replica's staging table, and a Commit writes the staged set through
//     as one snapshot_commit record (replica/commit_capture_log.h). A
//     Commit too large for one record first stores its placements in the
//     snapshot store and appends the record in the payload form
//     (replica/commit_payload.h); it is RESOURCE_EXHAUSTED only without a
//     store, or when even that form exceeds the record limit;
//   - any other write (seed-era applies, installs and configurations)
//     answers the replica's FAILED_PRECONDITION (replica/replica_refusal.h);
//   - reads go to the Indexer.
//
// De-duplication ids: a gated apply's names its stream, epoch and sequence
// (a retry of the same batch is stored once); every other record's is this
// writer's producer name and a counter, except a Commit's, which is its
// transaction id (a retried Commit is stored once). A gated apply the log
// finds a duplicate of is appended again without an id, so that the gate
// decides it again at its new position, as the standalone server would.
//
// Thread safety: every method may be called concurrently.
#ifndef KVINDEXER_REPLICA_WRITE_THROUGH_H_
#define KVINDEXER_REPLICA_WRITE_THROUGH_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/index_operations.h"
#include "core/indexer.h"
#include "core/request_limits.h"
#include "fleet/event_log.h"
#include "fleet/snapshot_store.h"
#include "kvindexer_fleet.pb.h"
#include "replica/applied_outcomes.h"

namespace kvindexer::replica {

struct WriteThroughOptions {
  // This replica's name in the records it appends (LogRecord.producer,
  // followed by "/" and the gRPC peer) and in its de-duplication ids.
  std::string producer;
  // The bounds requests are validated against before they are appended.
  RequestLimits limits;
  // How long a write waits for this replica to apply its record.
  std::chrono::milliseconds timeout{10000};
  // Where a Commit too large for one log record stores its placements
  // (the fleet's snapshot store). Null: such a Commit is
  // RESOURCE_EXHAUSTED. REQUIRES: outlives the WriteThrough.
  fleet::SnapshotStore* payloads = nullptr;
};

class WriteThrough final : public IndexOperations {
 public:
  // REQUIRES: `indexer`, `log` and `outcomes` outlive this object;
  // `outcomes` is the one this replica's log follower reports to, and the
  // Indexer's mutation log is a CommitCaptureLog. OWNERSHIP: not taken.
  WriteThrough(Indexer& indexer, fleet::EventLog& log,
               AppliedOutcomes& outcomes, WriteThroughOptions options);
  ~WriteThrough() = default;

  PendingAck Apply(const v1::ApplyExternalKvBatchRequest& req,
                   v1::ApplyExternalKvBatchResponse* resp,
                   const MutationOptions& options) override;
  PendingAck Replace(const v1::ReplaceExternalKvSnapshotRequest& req,
                     v1::ReplaceExternalKvSnapshotResponse* resp,
                     const MutationOptions& options) override;
  PendingAck Configure(const v1::ConfigureExpectedWorkersRequest& req,
                       v1::ConfigureExpectedWorkersResponse* resp) override;
  PendingAck Invalidate(const v1::InvalidateWorkerRequest& req,
                        v1::InvalidateWorkerResponse* resp) override;
  PendingAck Begin(const v1::BeginExternalKvSnapshotRequest& req,
                   v1::BeginExternalKvSnapshotResponse* resp) override;
  PendingAck Append(const v1::AppendExternalKvSnapshotRequest& req,
                    v1::AppendExternalKvSnapshotResponse* resp) override;
  PendingAck Commit(const v1::CommitExternalKvSnapshotRequest& req,
                    v1::CommitExternalKvSnapshotResponse* resp,
                    const MutationOptions& options) override;
  PendingAck Abort(const v1::AbortExternalKvSnapshotRequest& req,
                   v1::AbortExternalKvSnapshotResponse* resp) override;
  std::string IndexerEpoch() const override;
  absl::Status Match(const v1::MatchExternalKvRequest& req,
                     v1::MatchExternalKvResponse* resp) override;
  absl::Status MatchPrefix(
      const v1::MatchExternalKvPrefixRequest& req,
      absl::FunctionRef<void(const PrefixAnswer&)> deliver) override;
  absl::Status HitCounts(const v1::GetExternalKvHitCountsRequest& req,
                         v1::GetExternalKvHitCountsResponse* resp) override;

 private:
  // Appends `record` under `filed_under` with `dedup_id` ("" for a fresh
  // counter id) and waits for this replica's outcome at its position.
  absl::StatusOr<RecordResult> WriteAndWait(
      std::string_view filed_under,
      const ::kvindexer::fleet::v1::LogRecord& record, std::string dedup_id,
      bool retry_duplicate);
  std::string CounterDedupId();
  std::string ProducerOf(std::string_view peer) const;

  Indexer& indexer_;
  IndexOperations& ops_;
  fleet::EventLog& log_;
  AppliedOutcomes& outcomes_;
  const WriteThroughOptions options_;
  std::atomic<uint64_t> counter_{0};

  // Commits written through, by transaction id, with their applied_seq:
  // a repeated Commit answers OK again (the transaction itself is ended).
  // The newest kMaxCommitted only.
  static constexpr size_t kMaxCommitted = 4096;
  std::mutex committed_mu_;
  absl::flat_hash_map<std::string, uint64_t> committed_;
  std::deque<std::string> committed_order_;
};

}  // namespace kvindexer::replica

#endif  // KVINDEXER_REPLICA_WRITE_THROUGH_H_
