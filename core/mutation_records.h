// The write-ahead log record of each Indexer mutation, and its append to a
// MutationLog (docs/durability.md, "Write-ahead log").
//
// Every function takes the log the mutation goes to, or null when it is not
// logged (no log attached, or a replay): then it builds nothing and returns
// OK with *end = 0, so that the path without a log costs one comparison.
// On success *end is the offset just past the record, for Retract and for
// the wait for durability.
//
// Requests go into the record without a copy: the record borrows the
// caller's message for the duration of the append.
//
// Thread safety: as MutationLog::Append (the Indexer's mutation mutex).
#ifndef KVINDEXER_CORE_MUTATION_RECORDS_H_
#define KVINDEXER_CORE_MUTATION_RECORDS_H_

#include <chrono>
#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "core/mutation_log.h"
#include "core/removal_reason.h"
#include "kv_indexer.pb.h"
#include "kv_indexer_state.pb.h"

namespace kvindexer {

// An apply that the seed-era path applies or the gate accepts or finds a
// gap in: replaying the request meets the same gate.
[[nodiscard]] absl::Status LogMutation(
    MutationLog* log, const ::kv_indexer::v1::ApplyExternalKvBatchRequest& req,
    uint64_t* end);
[[nodiscard]] absl::Status LogMutation(
    MutationLog* log,
    const ::kv_indexer::v1::ReplaceExternalKvSnapshotRequest& req,
    uint64_t* end);
[[nodiscard]] absl::Status LogMutation(
    MutationLog* log,
    const ::kv_indexer::v1::ConfigureExpectedWorkersRequest& req,
    uint64_t* end);
// An InvalidateWorker that changed something.
[[nodiscard]] absl::Status LogMutation(
    MutationLog* log, const ::kv_indexer::v1::InvalidateWorkerRequest& req,
    uint64_t* end);
// A staged snapshot's commit (WAL op 8). Built by the caller, since it is
// also the install's batch (core/worker_batches.h).
[[nodiscard]] absl::Status LogStagedCommit(
    MutationLog* log, const state::v1::StagedSnapshotCommit& commit,
    uint64_t* end);
// Removal, liveness and marker records name the worker by its backend id
// (core/stream_key.h); the record carries the stream's fields.
// OperatorView::RemoveWorker.
[[nodiscard]] absl::Status LogRemoval(MutationLog* log,
                                      std::string_view worker_id,
                                      RemovalReason reason, uint64_t* end);
// A liveness sweep clears `worker_id`, or drops its marker when it has no
// record.
[[nodiscard]] absl::Status LogLivenessClear(MutationLog* log,
                                            std::string_view worker_id,
                                            uint64_t* end);
// The placement bound clears `worker_id`'s placements at `tier`.
[[nodiscard]] absl::Status LogEviction(MutationLog* log,
                                       std::string_view worker_id,
                                       uint32_t tier, uint32_t reason,
                                       uint64_t* end);
// `worker_id` becomes marked, or its marker's TTL changes. REQUIRES: ttl in
// 1..UINT32_MAX ms (HeartbeatHeader).
[[nodiscard]] absl::Status LogMarker(MutationLog* log,
                                     std::string_view worker_id,
                                     std::chrono::milliseconds ttl,
                                     uint64_t* end);

// Takes back the record appended with `end` (the mutation did not take
// effect); no-op for a null log.
inline void TakeBack(MutationLog* log, uint64_t end) {
  if (log != nullptr) log->Retract(end);
}

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_MUTATION_RECORDS_H_
