// The backend batches the host composes itself, rather than passing on a
// client's apply (docs/contract.md, "Recovery > How the host maps recovery
// onto the backend"):
//
//   * RecordBatch: for one worker, the address and spec the host's record
//     holds, with either no action (a refresh of the backend's worker record)
//     or CLEAR_ALL_AT_TIER at every tier (a gap's invalidation, a scale-in).
//     Passing the stored address and spec back keeps the backend's record
//     as it was: an apply with no spec would clear the stored one.
//   * SnapshotBatch: a whole ReplaceExternalKvSnapshot as ONE batch: CLEAR at
//     every tier, then one REPORT per tier that the snapshot fills. One
//     backend Apply is atomic whatever its size, so a concurrent reader sees
//     the old placement or the new one, never a mixture.
//   * StagedCommitBatch: a staged snapshot's commit (its log record) as the
//     same one batch.
//
// Both own the storage their view points into, except worker ids, addresses
// and snapshot hashes, which they view in place.
//
// Thread safety: none needed; each object is built and used by one thread.
#ifndef KVINDEXER_CORE_WORKER_BATCHES_H_
#define KVINDEXER_CORE_WORKER_BATCHES_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/worker_sequence_table.h"
#include "kv_indexer.pb.h"
#include "kv_indexer_state.pb.h"
#include "kvindexer/backend.h"

namespace kvindexer {

// The ABI form of a wire cache spec, field for field.
CacheSpec CacheSpecOf(const ::kv_indexer::v1::WorkerCacheSpec& spec);
// The wire form of an ABI cache spec, field for field (CacheSpecOf's inverse).
::kv_indexer::v1::WorkerCacheSpec WireCacheSpecOf(const CacheSpec& spec);

class RecordBatch {
 public:
  enum class Actions { kNone, kClearAllTiers };

  // REQUIRES: worker_id and record outlive the batch and stay unchanged.
  RecordBatch(std::string_view worker_id, const WorkerRecord& record,
              Actions actions);
  RecordBatch(const RecordBatch&) = delete;
  RecordBatch& operator=(const RecordBatch&) = delete;

  const ApplyBatchView& view() const { return view_; }

 private:
  ActionView clears_[kMaxTier];
  ApplyBatchView view_{};
};

class SnapshotBatch {
 public:
  // The snapshot's placement as one batch: CLEAR at HBM, DRAM and SSD, then
  // a REPORT per tier holding each hash of that tier once, with the mask of
  // its last occurrence (TierHashes entries of one tier concatenate, as if
  // one REPORT; docs/contract.md, "ApplyExternalKvBatch > Apply semantics").
  // A block's token count follows the request order of the occurrences that
  // count: the last positive size among them, across tiers, or unchanged
  // when there is none. `backend_id` is the stream's backend id
  // (core/stream_key.h). REQUIRES: ValidateReplace(req).ok(); req and
  // backend_id outlive the batch and stay unchanged.
  SnapshotBatch(const ::kv_indexer::v1::ReplaceExternalKvSnapshotRequest& req,
                std::string_view backend_id);
  SnapshotBatch(const SnapshotBatch&) = delete;
  SnapshotBatch& operator=(const SnapshotBatch&) = delete;

  const ApplyBatchView& view() const { return view_; }

 private:
  struct TierReport {
    std::vector<int64_t> hashes;
    std::vector<uint32_t> masks;
    std::vector<uint32_t> sizes;
  };

  TierReport reports_[kMaxTier + 1];  // indexed by tier number
  std::vector<ActionView> actions_;
  ApplyBatchView view_{};
};

class StagedCommitBatch {
 public:
  // CLEAR at HBM, DRAM and SSD, then one REPORT per hashes_by_tier entry
  // with a hash, viewing the entry's arrays in place; address and spec
  // (absent: none) from the commit. `backend_id` is the stream's backend
  // id. REQUIRES: each entry's tier in 1..3 and its side arrays empty or as
  // long as its hashes; commit and backend_id outlive the batch and stay
  // unchanged.
  StagedCommitBatch(const state::v1::StagedSnapshotCommit& commit,
                    std::string_view backend_id);
  StagedCommitBatch(const StagedCommitBatch&) = delete;
  StagedCommitBatch& operator=(const StagedCommitBatch&) = delete;

  const ApplyBatchView& view() const { return view_; }

 private:
  std::vector<ActionView> actions_;
  ApplyBatchView view_{};
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_WORKER_BATCHES_H_
