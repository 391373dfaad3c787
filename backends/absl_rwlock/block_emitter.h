// Feeds one Match or PrefixScan call's results to a BlockVisitor, keeping the
// visitor protocol of backend.h: OnWorker exactly once per worker per call,
// before the first OnBlock that carries one of its placements; OnBlock for
// every requested hash, absent blocks as placement_count 0.
//
// One emitter serves one call. It unpacks each block's 8-byte placements into
// the ABI's Placement array in a scratch buffer that lives inside the emitter
// for up to kScratchInline placements, and tracks the workers already
// announced in a bitset indexed by ordinal. The bitset grows only as far as
// the highest ordinal the call meets (not with the number of workers
// registered), and lives inside the emitter up to ordinal
// kSeenInlineWords * 64 - 1; only larger calls allocate.
//
// Thread safety: none; the caller holds the backend's lock (shared or
// exclusive) for the emitter's whole life.
#ifndef KVINDEXER_BACKENDS_ABSL_RWLOCK_BLOCK_EMITTER_H_
#define KVINDEXER_BACKENDS_ABSL_RWLOCK_BLOCK_EMITTER_H_

#include <stddef.h>
#include <stdint.h>

#include "absl/container/inlined_vector.h"
#include "block_table.h"
#include "kvindexer/backend.h"
#include "worker_registry.h"

namespace kvindexer::absl_rwlock {

class BlockEmitter {
 public:
  static constexpr size_t kScratchInline = 16;
  static constexpr size_t kSeenInlineWords = 8;

  // REQUIRES: `workers` and `visitor` outlive the emitter.
  BlockEmitter(const WorkerRegistry& workers, BlockVisitor* visitor);

  // Reports the block at `index` of the request; `record` is null when the
  // block is absent. Returns the visitor's verdict: false means stop. May
  // throw std::bad_alloc (a block with more than kScratchInline placements,
  // or an ordinal past the inline bitset) before any callback for this
  // block.
  bool Emit(size_t index, const BlockRecord* record);

 private:
  const WorkerRegistry& workers_;
  BlockVisitor* visitor_;
  absl::InlinedVector<uint64_t, kSeenInlineWords> seen_;
  absl::InlinedVector<Placement, kScratchInline> scratch_;
};

}  // namespace kvindexer::absl_rwlock

#endif  // KVINDEXER_BACKENDS_ABSL_RWLOCK_BLOCK_EMITTER_H_
