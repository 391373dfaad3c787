// ImageBackend: an IndexBackend that only holds placements, so that a
// checkpoint can be built off the serving path by replaying the previous
// checkpoint and the log through an Indexer of its own (docs/durability.md,
// "Checkpoints"). It answers no queries (Match, PrefixScan and HitCounts
// fail with kInternal) and keeps no hit counters, but counts placements
// (CountPlacements), which the placement bound of a fleet snapshot's image
// needs (core/placement_bound.h). Apply and RemoveWorker follow backend.h
// exactly, so that its placements are those any conforming backend would
// hold after the same calls.
//
// Thread safety: none; one compaction owns it.
#ifndef KVINDEXER_DURABLE_IMAGE_BACKEND_H_
#define KVINDEXER_DURABLE_IMAGE_BACKEND_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "kvindexer/backend.h"

namespace kvindexer::durable {

class ImageBackend final : public IndexBackend {
 public:
  ImageBackend();
  ~ImageBackend() override;

  BackendStatus Apply(const ApplyBatchView& batch) noexcept override;
  BackendStatus Match(HashSpan hashes, bool count_as_hit,
                      BlockVisitor* visitor) noexcept override;
  BackendStatus PrefixScan(HashSpan hashes,
                           BlockVisitor* visitor) noexcept override;
  BackendStatus HitCounts(HashSpan hashes, uint64_t* counts) noexcept override;
  void GetStats(BackendStats* stats) noexcept override;
  BackendStatus RemoveWorker(StringView worker_id,
                             uint32_t* existed) noexcept override;
  BackendStatus CountPlacements(StringView worker_id, uint64_t* counts_by_tier,
                                uint32_t* existed) noexcept override;

  // Makes room for `blocks` distinct blocks at once, so that loading a
  // checkpoint does not rehash the block map as it grows (for ten million
  // blocks the last rehash alone moves five million entries).
  void ReserveBlocks(size_t blocks);

  // Asked, when a worker first appears, how many placements it will hold
  // per tier (counts_by_tier has kMaxTier + 1 entries, [0] unused, all 0 on
  // entry); its maps then make room for them at once instead of rehashing
  // as they grow. Unset: the maps grow.
  void SetHoldingSizes(
      std::function<void(std::string_view worker_id, uint64_t* counts_by_tier)>
          sizes);

  // Limits the image to the blocks in `blocks`, for a checkpoint built by
  // merging (durable/checkpoint_merge.h), which takes every other block
  // from the previous checkpoint as it is. Apply refuses a batch that
  // would REPORT or REVOKE another hash (kFailedPrecondition, changing
  // nothing) and notes it (touched_outside). Each CLEAR_ALL_AT_TIER and
  // removal is noted too (Cleared), since it also takes away placements of
  // blocks the image does not hold. REQUIRES: called before any mutation;
  // `blocks` outlives the image.
  void RestrictTo(const absl::flat_hash_set<int64_t>* blocks);
  // Since RestrictTo: whether a batch touched a hash outside the blocks.
  bool touched_outside() const;
  // Since RestrictTo: whether the worker's placements at `tier` were
  // cleared, or the worker removed, at any point.
  bool Cleared(std::string_view worker_id, uint32_t tier) const;

  // One worker's placements at one tier, as the parallel arrays of a REPORT
  // action (sizes: each block's token count, 0 when unknown).
  struct TierView {
    std::string_view worker_id;
    uint32_t tier;
    HashSpan hashes;
    U32Span component_masks;
    U32Span block_sizes;
  };
  // Visits every (worker, tier) that holds placements, each at most
  // `max_hashes` at a time (a larger holding is visited in parts). The
  // views are valid during the call only.
  void ForEachTier(size_t max_hashes,
                   absl::FunctionRef<void(const TierView&)> visit) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_IMAGE_BACKEND_H_
