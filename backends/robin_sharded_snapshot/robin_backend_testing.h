// Test-only access to RobinShardedSnapshotBackend's internals: a hook that
// runs between the writer's steps, allocation-failure injection, and counts
// of merges, live spill arrays and worker table entries. Only tests and test
// tools include this header; the backend's public interface (robin_backend.h)
// has none of it.
//
// Every function requires that no writer (Apply, RemoveWorker, counting
// Match) runs concurrently on the backend, unless it says otherwise.
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_ROBIN_BACKEND_TESTING_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_ROBIN_BACKEND_TESTING_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

#include "robin_backend.h"

namespace kvindexer::robin {

class RobinBackendTesting {
 public:
  // Where the hook runs, with the writer mutex held: after pass one (the
  // batch is in the non-live copy), after the publish (old-copy readers may
  // still run), after the catch-up (both copies hold the batch).
  using WriterPhase = RobinShardedSnapshotBackend::WriterPhase;
  using WriterHook = RobinShardedSnapshotBackend::WriterHook;

  // Installs `hook` (empty: none). Call before any concurrent use.
  static void SetWriterHook(RobinShardedSnapshotBackend& backend,
                            WriterHook hook) {
    backend.hook_ = std::move(hook);
  }
  // The spill-array allocation after the next `n` fails (n < 0: none fails).
  static void FailSpillAllocationsAfter(RobinShardedSnapshotBackend& backend,
                                        int64_t n) {
    backend.arena_.FailAllocationsAfterForTesting(n);
  }
  // The next `n` page mappings for base tables succeed and the one after
  // fails (n < 0: none fails).
  static void FailMergeMappingsAfter(RobinShardedSnapshotBackend& backend,
                                     int64_t n) {
    backend.mapping_pool_.FailAfterForTesting(n);
  }
  // Merges so far (each may cover several shards).
  static uint64_t Merges(const RobinShardedSnapshotBackend& backend) {
    return backend.merges_;
  }
  // Scans of the whole index made to find a worker's placements (CLEAR of
  // scanned tiers, RemoveWorker), each serving every tier it was for.
  static uint64_t Scans(const RobinShardedSnapshotBackend& backend) {
    return backend.scans_;
  }
  // The length of the live copy's worker table: one past the highest ordinal
  // ever taken, which ordinal reuse keeps at the most workers present at once.
  static size_t WorkerTableLength(RobinShardedSnapshotBackend& backend) {
    ReadSection section(backend.gate_);
    return backend.copies_[section.live()].workers.records.size();
  }
  // The buckets of every shard's delta and counter table, in both copies
  // (what the tables really hold, not what GetStats accounts for).
  static std::pair<size_t, size_t> DeltaAndCounterBuckets(
      const RobinShardedSnapshotBackend& backend) {
    size_t deltas = 0;
    size_t counters = 0;
    for (const SnapshotCopy& copy : backend.copies_) {
      for (uint32_t shard = 0; shard < SnapshotCopy::kShards; ++shard) {
        deltas += copy.delta(shard).bucket_count();
        counters += copy.counters(shard).bucket_count();
      }
    }
    return {deltas, counters};
  }
  // The scan threshold of CLEAR (robin_backend.h, kScanMinPlacements):
  // max(min, placements / divisor); divisor 0 turns scans off.
  static void SetScanThreshold(RobinShardedSnapshotBackend& backend,
                               uint64_t min, uint64_t divisor) {
    backend.scan_min_ = min;
    backend.scan_divisor_ = divisor;
  }
  // The tiers of `worker_id` whose CLEAR scans (bit t for tier t).
  static uint32_t ScannedTiers(const RobinShardedSnapshotBackend& backend,
                               std::string_view worker_id) {
    const auto found = backend.registry_.find(worker_id);
    if (found == backend.registry_.end()) return 0;
    uint32_t bits = 0;
    const auto& state = *backend.worker_states_[found->second];
    for (uint32_t tier = 0; tier < state.scanned.size(); ++tier) {
      if (state.scanned[tier]) bits |= 1u << tier;
    }
    return bits;
  }
  // Bytes held by every worker's holdings logs.
  static uint64_t HoldingsBytes(const RobinShardedSnapshotBackend& backend) {
    return backend.holdings_bytes_;
  }
  // Spill arrays allocated and not freed.
  static uint64_t SpillArrays(const RobinShardedSnapshotBackend& backend) {
    return backend.arena_.arrays();
  }
};

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_ROBIN_BACKEND_TESTING_H_
