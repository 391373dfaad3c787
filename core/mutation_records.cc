#include "core/mutation_records.h"

#include <string>

#include "absl/status/statusor.h"
#include "core/stream_key.h"

namespace kvindexer {
namespace {

namespace v1 = ::kv_indexer::v1;
using state::v1::WalRecord;

absl::Status Append(MutationLog* log, const WalRecord& record, uint64_t* end) {
  absl::StatusOr<uint64_t> appended = log->Append(record);
  if (!appended.ok()) return appended.status();
  *end = *appended;
  return absl::OkStatus();
}

// A WalRecord that holds the caller's request for as long as it lives,
// without copying it: the request is handed to the record and taken back
// before the record is destroyed. The record is only ever read (Append
// takes it by const reference), so the request is never changed.
template <typename Request, void (WalRecord::*kLend)(Request*),
          Request* (WalRecord::*kTakeBack)()>
class BorrowingRecord {
 public:
  explicit BorrowingRecord(const Request& req) {
    (record_.*kLend)(const_cast<Request*>(&req));
  }
  ~BorrowingRecord() { (record_.*kTakeBack)(); }
  BorrowingRecord(const BorrowingRecord&) = delete;
  BorrowingRecord& operator=(const BorrowingRecord&) = delete;

  const WalRecord& record() const { return record_; }

 private:
  WalRecord record_;
};

using ApplyRecord =
    BorrowingRecord<v1::ApplyExternalKvBatchRequest,
                    &WalRecord::unsafe_arena_set_allocated_apply,
                    &WalRecord::unsafe_arena_release_apply>;
using ReplaceRecord =
    BorrowingRecord<v1::ReplaceExternalKvSnapshotRequest,
                    &WalRecord::unsafe_arena_set_allocated_replace,
                    &WalRecord::unsafe_arena_release_replace>;
using InvalidateRecord =
    BorrowingRecord<v1::InvalidateWorkerRequest,
                    &WalRecord::unsafe_arena_set_allocated_invalidate,
                    &WalRecord::unsafe_arena_release_invalidate>;
using ConfigureRecord =
    BorrowingRecord<v1::ConfigureExpectedWorkersRequest,
                    &WalRecord::unsafe_arena_set_allocated_configure,
                    &WalRecord::unsafe_arena_release_configure>;

}  // namespace

absl::Status LogMutation(MutationLog* log,
                         const v1::InvalidateWorkerRequest& req,
                         uint64_t* end) {
  *end = 0;
  if (log == nullptr) return absl::OkStatus();
  const InvalidateRecord borrowed(req);
  return Append(log, borrowed.record(), end);
}

absl::Status LogMutation(MutationLog* log,
                         const v1::ApplyExternalKvBatchRequest& req,
                         uint64_t* end) {
  *end = 0;
  if (log == nullptr) return absl::OkStatus();
  const ApplyRecord borrowed(req);
  return Append(log, borrowed.record(), end);
}

absl::Status LogMutation(MutationLog* log,
                         const v1::ReplaceExternalKvSnapshotRequest& req,
                         uint64_t* end) {
  *end = 0;
  if (log == nullptr) return absl::OkStatus();
  const ReplaceRecord borrowed(req);
  return Append(log, borrowed.record(), end);
}

absl::Status LogMutation(MutationLog* log,
                         const v1::ConfigureExpectedWorkersRequest& req,
                         uint64_t* end) {
  *end = 0;
  if (log == nullptr) return absl::OkStatus();
  const ConfigureRecord borrowed(req);
  return Append(log, borrowed.record(), end);
}

absl::Status LogStagedCommit(MutationLog* log,
                             const state::v1::StagedSnapshotCommit& commit,
                             uint64_t* end) {
  *end = 0;
  if (log == nullptr) return absl::OkStatus();
  using CommitRecord =
      BorrowingRecord<state::v1::StagedSnapshotCommit,
                      &WalRecord::unsafe_arena_set_allocated_snapshot_commit,
                      &WalRecord::unsafe_arena_release_snapshot_commit>;
  const CommitRecord borrowed(commit);
  return Append(log, borrowed.record(), end);
}

absl::Status LogRemoval(MutationLog* log, std::string_view worker_id,
                        RemovalReason reason, uint64_t* end) {
  *end = 0;
  if (log == nullptr) return absl::OkStatus();
  WalRecord record;
  state::v1::WorkerRemoval* removal = record.mutable_removal();
  SetStreamFields(worker_id, removal);
  removal->set_reason(static_cast<uint32_t>(reason));
  return Append(log, record, end);
}

absl::Status LogLivenessClear(MutationLog* log, std::string_view worker_id,
                              uint64_t* end) {
  *end = 0;
  if (log == nullptr) return absl::OkStatus();
  WalRecord record;
  SetStreamFields(worker_id, record.mutable_liveness_clear());
  return Append(log, record, end);
}

absl::Status LogEviction(MutationLog* log, std::string_view worker_id,
                         uint32_t tier, uint32_t reason, uint64_t* end) {
  *end = 0;
  if (log == nullptr) return absl::OkStatus();
  WalRecord record;
  state::v1::PlacementEviction* eviction = record.mutable_eviction();
  SetStreamFields(worker_id, eviction);
  eviction->set_tier(tier);
  eviction->set_reason(reason);
  return Append(log, record, end);
}

absl::Status LogMarker(MutationLog* log, std::string_view worker_id,
                       std::chrono::milliseconds ttl, uint64_t* end) {
  *end = 0;
  if (log == nullptr) return absl::OkStatus();
  WalRecord record;
  state::v1::HeartbeatMarker* marker = record.mutable_marker();
  SetStreamFields(worker_id, marker);
  marker->set_ttl_ms(static_cast<uint32_t>(ttl.count()));
  return Append(log, record, end);
}

}  // namespace kvindexer
