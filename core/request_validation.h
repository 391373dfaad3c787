// Request validation for kv_indexer.v1 (docs/contract.md, "Apply validation",
// "Match validation", "GetExternalKvHitCounts",
// "MatchExternalKvPrefix > Order of checks", "Recovery > Replace validation"
// and "Recovery > Configure validation"). Status codes and messages are
// those of the contract, verbatim.
// Enum fields are checked by their raw numbers: proto3 enums are open, so a
// request may carry any int32 there.
//
// Validation only reads the request; it never touches the index.
#ifndef KVINDEXER_CORE_REQUEST_VALIDATION_H_
#define KVINDEXER_CORE_REQUEST_VALIDATION_H_

#include <stddef.h>

#include "absl/status/status.h"
#include "common/wire_vocabulary.h"
#include "kv_indexer.pb.h"

namespace kvindexer {

// "ApplyExternalKvBatch > Apply validation", first failure wins: empty
// worker_id; too many actions; too many hashes
// over all actions (CLEAR included); then per action: tier, type and hashes,
// side-array lengths.
[[nodiscard]] absl::Status ValidateApply(
    const ::kv_indexer::v1::ApplyExternalKvBatchRequest& req);
// "MatchExternalKv > Match validation": non-empty, at most
// kMaxHashesPerRequest hashes.
[[nodiscard]] absl::Status ValidateMatch(
    const ::kv_indexer::v1::MatchExternalKvRequest& req);
// "GetExternalKvHitCounts": as ValidateMatch.
[[nodiscard]] absl::Status ValidateHitCounts(
    const ::kv_indexer::v1::GetExternalKvHitCountsRequest& req);
// "Recovery > Replace validation", steps V1 to V3 (V4 needs the worker
// table): empty worker_id; then each TierHashes entry in order: its tier,
// then its side arrays. No hash-count bound.
[[nodiscard]] absl::Status ValidateReplace(
    const ::kv_indexer::v1::ReplaceExternalKvSnapshotRequest& req);
// "Recovery > Configure validation", C1 to C3: at most kMaxExpectedWorkers
// workers; no empty worker_id; no repeated worker_id.
[[nodiscard]] absl::Status ValidateConfigure(
    const ::kv_indexer::v1::ConfigureExpectedWorkersRequest& req);
// "MatchExternalKvPrefix > Order of checks", step 3: non-empty; no upper
// bound.
[[nodiscard]] absl::Status ValidatePrefix(
    const ::kv_indexer::v1::MatchExternalKvPrefixRequest& req);

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_REQUEST_VALIDATION_H_
