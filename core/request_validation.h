// Request validation for kv_indexer.v1 (docs/contract.md, "Apply validation",
// "Match validation", "GetExternalKvHitCounts",
// "MatchExternalKvPrefix > Order of checks", "Recovery > Replace validation"
// and "Recovery > Configure validation"). Status codes and messages are
// those of the contract, verbatim.
// Enum fields are checked by their raw numbers: proto3 enums are open, so a
// request may carry any int32 there.
//
// Validation only reads the request (and the RequestLimits it is given); it
// never touches the index. CheckNewWorkerCapacity is the one check that needs
// the worker table, which the caller reads.
#ifndef KVINDEXER_CORE_REQUEST_VALIDATION_H_
#define KVINDEXER_CORE_REQUEST_VALIDATION_H_

#include <stddef.h>
#include <stdint.h>

#include <vector>

#include "absl/status/status.h"
#include "common/wire_vocabulary.h"
#include "core/request_limits.h"
#include "core/stream_key.h"
#include "kv_indexer.pb.h"

namespace kvindexer {

// A tier by its raw number, as apply step 4a and Replace V2 check it:
// INVALID_ARGUMENT for 0 (TIER_UNKNOWN) and for numbers outside 1..3.
[[nodiscard]] absl::Status ValidateTier(int32_t tier);
// The stream a request names is resolved by K1 to K4 (docs/contract.md,
// "Streams > Validation") in place of the worker-id steps: worker_id and
// stream_id.worker_id agree; the worker id is not empty (nor blank, for a
// line-A request); worker id, namespace and the stream's other names are
// within KV_INDEXER_MAX_WORKER_ID_BYTES. On success `key` (when not null)
// holds the stream.
//
// "ApplyExternalKvBatch > Apply validation", first failure wins: the stream
// (K1 to K4, worker_generation included); worker_address and worker_epoch
// lengths (limits;
// the epoch on both paths, though only the gated one reads it); too many
// actions; too many hashes over all actions (CLEAR included); then per
// action: tier, type and hashes, side-array lengths.
[[nodiscard]] absl::Status ValidateApply(
    const ::kv_indexer::v1::ApplyExternalKvBatchRequest& req,
    const RequestLimits& limits = RequestLimits{}, StreamKey* key = nullptr);
// "MatchExternalKv > Match validation": non-empty, at most
// kMaxHashesPerRequest hashes.
[[nodiscard]] absl::Status ValidateMatch(
    const ::kv_indexer::v1::MatchExternalKvRequest& req);
// "GetExternalKvHitCounts": as ValidateMatch.
[[nodiscard]] absl::Status ValidateHitCounts(
    const ::kv_indexer::v1::GetExternalKvHitCountsRequest& req);
// "Recovery > Replace validation", steps V1 to V3 (V4 needs the worker
// table): empty worker_id; worker_id, worker_address and worker_epoch
// lengths (V1a, V1b, V1c);
// then each TierHashes entry in order: its tier, then its side arrays. No
// hash-count bound.
[[nodiscard]] absl::Status ValidateReplace(
    const ::kv_indexer::v1::ReplaceExternalKvSnapshotRequest& req,
    const RequestLimits& limits = RequestLimits{}, StreamKey* key = nullptr);
// "Recovery > Configure validation", C1 to C3: at most kMaxExpectedWorkers
// workers, and at most limits.max_workers (C1a: the request is the whole
// resulting worker set); K1 and K2 for every entry, then K3 and K4 (with
// worker_generation and model), then worker_address lengths (C2b), each
// check over the whole list; no repeated stream (C3). On success `keys`
// (when not null) holds each entry's stream, in request order.
[[nodiscard]] absl::Status ValidateConfigure(
    const ::kv_indexer::v1::ConfigureExpectedWorkersRequest& req,
    const RequestLimits& limits = RequestLimits{},
    std::vector<StreamKey>* keys = nullptr);
// "Streams > InvalidateWorker": K1 to K4 (a line-A call: blank ids are
// refused).
[[nodiscard]] absl::Status ValidateInvalidate(
    const ::kv_indexer::v1::InvalidateWorkerRequest& req,
    const RequestLimits& limits, StreamKey* key);
// "Recovery > Staged snapshots", Begin's S1 to S3 (S4 onwards need the worker
// table): stream_id present (S1); K2 to K4 with blank worker ids refused,
// snapshot_id and the metadata's worker_generation and model counted as K4
// names, then worker_address and worker_epoch lengths (S2); metadata present
// (S3).
[[nodiscard]] absl::Status ValidateBegin(
    const ::kv_indexer::v1::BeginExternalKvSnapshotRequest& req,
    const RequestLimits& limits, StreamKey* key);
// "Limits > Bounds": RESOURCE_EXHAUSTED when a request that would add one
// more worker record finds `live_workers` records already, and that is
// limits.max_workers or more. Workers that have a record are never refused
// by it.
[[nodiscard]] absl::Status CheckNewWorkerCapacity(size_t live_workers,
                                                  const RequestLimits& limits);
// "MatchExternalKvPrefix > Order of checks", step 3: non-empty; no upper
// bound.
[[nodiscard]] absl::Status ValidatePrefix(
    const ::kv_indexer::v1::MatchExternalKvPrefixRequest& req);

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_REQUEST_VALIDATION_H_
