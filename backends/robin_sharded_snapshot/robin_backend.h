// RobinShardedSnapshotBackend: the fast default IndexBackend. Design notes,
// memory costs and the hit-counter race are in DESIGN.md.
//
// Two copies of the reader-visible index (SnapshotCopy: tsl::robin_map shards
// of block records plus a published worker table) are kept in step with the
// left-right protocol. Queries read the live copy inside a wait-free read
// section and never wait for a writer. Apply, serialised by a mutex, works on
// the other copy, publishes it in one atomic store (so a batch spanning many
// shards becomes visible all at once), waits for readers of the old copy to
// leave, and then brings the old copy up to date by copying the records the
// batch touched.
//
// Hit counters live in the copies too. A counting Match is therefore a writer:
// it takes the writer mutex, counts into the non-live copy and publishes like
// an apply, so its increments and an apply's counter deletions become visible
// all at once. Non-counting readers never wait for it.
//
// Thread safety: every IndexBackend method may be called concurrently.
// REQUIRES: a BlockVisitor callback never calls Apply or a counting Match on
// the same backend (they would wait for the callback's own read section or
// for the writer mutex the counting Match holds).
//
// The class is defined by concern (DESIGN.md, "Files"): robin_backend.cc
// (construction), apply.cc (Apply: the worker, pass one, holdings),
// publish.cc (publish, catch-up and rollback of the other copy),
// delta_merge.cc (the merge policy and merges), bulk_load.cc
// (SetWriteMode: filling a new backend unpublished), queries.cc (Match,
// PrefixScan, HitCounts), remove_worker.cc (RemoveWorker),
// count_placements.cc (CountPlacements),
// shrink_after_removal.cc (giving back what a removal emptied), stats.cc
// (GetStats and memory accounting). Tests
// reach its internals through robin_backend_testing.h.
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_ROBIN_BACKEND_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_ROBIN_BACKEND_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base_table.h"
#include "holding_log.h"
#include "kvindexer/backend.h"
#include "left_right_gate.h"
#include "mapping_pool.h"
#include "snapshot_copy.h"
#include "spill_arena.h"
#include "tsl/robin_map.h"
#include "worker_ordinals.h"
#include "worker_table.h"

namespace kvindexer::robin {

inline constexpr char kBackendName[] = "robin_sharded_snapshot";

class RobinShardedSnapshotBackend final : public IndexBackend {
 public:
  // A shard's delta is merged into its base table once it holds more than
  // max(kMergeMinDelta, base size / kMergeBaseRatio) blocks (DESIGN.md).
  static constexpr size_t kMergeMinDelta = 1024;
  static constexpr size_t kMergeBaseRatio = 12;
  // While a bulk load fills the index (bulk_load.cc) the ratio is divided
  // by this: only one copy of the deltas exists then, so a delta twice as
  // large costs the memory the two copies cost in service, and each block
  // is rewritten by fewer merges while the index grows.
  static constexpr size_t kBulkRatioDivisor = 2;
  // The entries one apply's merges may write (about 80 MB, tens of ms).
  static constexpr size_t kMergeBudget = size_t{1} << 22;
  // A (worker, tier) holding at least max(kScanMinPlacements, placements /
  // kScanDivisor) drops its holdings log, and CLEAR finds its
  // placements by a scan of the index (DESIGN.md, "Holdings").
  static constexpr uint64_t kScanMinPlacements = 65536;
  static constexpr uint64_t kScanDivisor = 128;

  RobinShardedSnapshotBackend();
  ~RobinShardedSnapshotBackend() override;
  RobinShardedSnapshotBackend(const RobinShardedSnapshotBackend&) = delete;
  RobinShardedSnapshotBackend& operator=(const RobinShardedSnapshotBackend&) =
      delete;

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
  BackendStatus SetWriteMode(WriteMode mode) noexcept override;

  // Merge a shard's delta into its base table once the delta holds more
  // than max(min_delta, base size / base_ratio) blocks (base_ratio > 0),
  // writing at most `budget` entries after one apply (but always merging at
  // least one due shard); during a bulk load the ratio is base_ratio /
  // kBulkRatioDivisor (at least 1). Call before any concurrent use.
  void SetMergePolicy(size_t min_delta, size_t base_ratio,
                      size_t budget = kMergeBudget);

 private:
  // Writer-side state of one worker: the holdings logs CLEAR needs, the
  // number of placements at each tier, and the tiers CLEAR finds by a scan
  // of the index instead of a log (DESIGN.md, "Holdings"): their logs are
  // empty and REPORT adds nothing to them. Index 0 is unused (tiers 1..3).
  struct WorkerState {
    std::array<HoldingLog, kMaxTier + 1> holdings;
    std::array<uint64_t, kMaxTier + 1> live{};
    std::array<bool, kMaxTier + 1> scanned{};
  };

  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const {
      return std::hash<std::string_view>()(s);
    }
  };
  struct StringEqual {
    using is_transparent = void;
    bool operator()(std::string_view a, std::string_view b) const {
      return a == b;
    }
  };

  BackendStatus ApplyLocked(const ApplyBatchView& batch);
  BackendStatus CountingMatch(HashSpan hashes, BlockVisitor* visitor) noexcept;
  // REQUIRES: writer_mu_ held. OK when the writer may change the non-live
  // copy: not poisoned, and any sync left pending by an allocation failure
  // completed.
  BackendStatus WriterReady() noexcept;
  // REQUIRES: writer_mu_ held. Completes a sync left pending by an allocation
  // failure; false when it still cannot.
  bool FinishPendingSync() noexcept;
  // Makes the non-live copy (holding the changes listed in touched_ and
  // counted_) live, then brings the other copy up to date. During a bulk
  // load the non-live copy stays where it is (CommitBulkStep).
  void Publish() noexcept;
  // The copy that holds every mutation made so far: the live one, or during
  // a bulk load the non-live one the load fills.
  const SnapshotCopy& Current() const {
    return copies_[bulk_ ? 1 - gate_.live() : gate_.live()];
  }
  // Bulk loading (bulk_load.cc; DESIGN.md, "Bulk loading"). True when both
  // copies are as a new backend's: no block, no delta entry, no base, no
  // worker record, so that the live copy references nothing a load frees.
  bool Pristine() const;
  // Ends a bulk load: merges the deltas past the serving policy, publishes
  // the filled copy and makes the other one equal to it. Throws
  // std::bad_alloc (the caller then poisons the backend).
  void EndBulkLoad();

  // Pass one: the batch's effect on `back`. Throws std::bad_alloc.
  void RunActions(const ApplyBatchView& batch, uint32_t ordinal,
                  WorkerState& state, SnapshotCopy& back);
  // Stores `record`, a block's new state, in `delta`: over `it` when the
  // delta holds the block, else as a new entry (the block was only in the
  // base; a spill array still shared with the base is copied first). On
  // failure frees the arrays only `record` references and rethrows
  // std::bad_alloc, leaving the delta as it was.
  void StoreInDelta(SnapshotCopy::Map& delta, SnapshotCopy::Map::iterator it,
                    BlockKey block_key, BlockRecord record);
  // Adds the placement; a new one is appended to `log` unless it is null
  // (a scanned tier).
  bool ReportPlacement(SnapshotCopy& back, int64_t hash, uint32_t key,
                       uint32_t mask, uint32_t size, HoldingLog* log);
  bool RevokePlacement(SnapshotCopy& back, int64_t hash, uint32_t key);
  static bool IsPrivate(const Placement* array) {
    return SpillArena::IsPrivate(array);
  }

  // Makes the non-live copy equal to the live one for every hash in touched_
  // (record and counter) and counted_ (counter). Throws std::bad_alloc;
  // idempotent, so it may simply be retried.
  void SyncBackCopy();
  void SyncCounter(const SnapshotCopy& front, SnapshotCopy& back, int64_t hash,
                   uint64_t mixed);
  // After a successful sync: copies the remaining fields and frees what only
  // the old copy referenced.
  void FinishSync() noexcept;
  // Undoes pass one on the non-live copy after an allocation failure.
  void RollBack(WorkerState& state,
                const std::array<uint64_t, kMaxTier + 1>& saved_live);
  // REQUIRES: both copies in step, or a bulk load. Folds every delta that
  // has grown past the merge policy into a new base table and installs it
  // in both copies (during a bulk load in the copy the load fills only).
  void MergeLargeDeltas() noexcept { MergeDeltas(MergeRatio(), merge_budget_); }
  // MergeLargeDeltas with the limits given: deltas past
  // max(merge_min_delta_, base size / ratio), at most `budget` entries
  // written (at least one shard merged). False when out of memory (nothing
  // merged).
  bool MergeDeltas(size_t ratio, size_t budget) noexcept;
  // The ratio in force: merge_base_ratio_, or bulk_merge_base_ratio_ during
  // a bulk load.
  size_t MergeRatio() const {
    return bulk_ ? bulk_merge_base_ratio_ : merge_base_ratio_;
  }
  // The delta size past which a shard over `base` is merged.
  size_t MergeLimit(const BaseTable& base) const {
    return MergeLimitAt(base, MergeRatio());
  }
  size_t MergeLimitAt(const BaseTable& base, size_t ratio) const;
  void CompactHoldings(uint32_t ordinal, WorkerState& state) noexcept;
  // RemoveWorker with writer_mu_ held and the writer ready. Throws
  // std::bad_alloc.
  BackendStatus RemoveWorkerLocked(std::string_view id, uint32_t* existed);
  // The entries of every shard's delta and counter table, taken before a
  // removal so that FitEmptiedShards can tell what it freed.
  struct ShardSizes {
    std::array<size_t, SnapshotCopy::kShards> deltas;
    std::array<size_t, SnapshotCopy::kShards> counters;
  };
  ShardSizes SizesOfShards() const;
  // REQUIRES: both copies in step. Rebuilds smaller, in both copies, the
  // delta and counter tables a removal left sparse (sizes before it in
  // `before`), and gives back the room the removal's list of changed blocks
  // grew beyond `touched_capacity` (shrink_after_removal.cc).
  void FitEmptiedShards(const ShardSizes& before,
                        size_t touched_capacity) noexcept;
  // CLEAR_ALL_AT_TIER for every tier in `tiers` (bit t: tier t): revokes in
  // `back` every placement the worker holds at those tiers, found through
  // their holdings logs or, for scanned tiers, by one scan of `back` that
  // serves all of them (clearing one tier moves no placement of another).
  // Throws std::bad_alloc.
  void ClearTiers(uint32_t ordinal, uint32_t tiers, WorkerState& state,
                  SnapshotCopy& back);
  // The blocks of `copy` holding a placement of worker `ordinal`, per tier
  // in `tiers` (bit t: tier t; held[t] for tier t), from one pass over every
  // shard's delta and base (a base entry the delta overrides may be listed;
  // revoking it then finds nothing). `expected` sizes the lists. Throws
  // std::bad_alloc.
  using HeldByTier = std::array<std::vector<int64_t>, kMaxTier + 1>;
  HeldByTier ScanForKeys(const SnapshotCopy& copy, uint32_t ordinal,
                         uint32_t tiers,
                         const std::array<uint64_t, kMaxTier + 1>& expected);
  // Placements at one (worker, tier) from which CLEAR scans rather than
  // keeps a log: the larger of scan_min_ and the index's placements divided
  // by scan_divisor_ (0: never).
  uint64_t ScanThreshold() const;
  static uint64_t HoldingsBytes(const WorkerState& state);
  void UpdateMemory() noexcept;

  // Points in Apply and counting Match where the writer hook runs, with the
  // writer mutex held (tests set it through RobinBackendTesting).
  enum class WriterPhase {
    kBackCopyApplied,  // the batch is in the non-live copy, not yet published
    kPublished,        // the batch is live; old-copy readers may still run
    kDone,             // both copies hold the batch
  };
  using WriterHook = std::function<void(WriterPhase)>;
  void RunHook(WriterPhase phase) {
    if (hook_) hook_(phase);
  }
  friend class RobinBackendTesting;

  // Reader-visible.
  LeftRightGate gate_;
  SnapshotCopy copies_[2];
  std::atomic<uint64_t> writer_bytes_{0};

  // Writer-side, guarded by writer_mu_.
  std::mutex writer_mu_;
  bool poisoned_ = false;
  bool pending_sync_ = false;
  // The mode SetWriteMode last set is kBulkLoad.
  bool bulk_mode_ = false;
  // A bulk load is filling the non-live copy, which is not published until
  // it ends; the live copy stays pristine meanwhile. False in kBulkLoad
  // mode when the load began on a backend that was not pristine.
  bool bulk_ = false;
  SpillArena arena_;
  // The workers present: id -> ordinal, and by ordinal (nullptr for a free
  // one) their writer-side state and current record. Both vectors are at
  // least ordinals_.end() long.
  tsl::robin_map<std::string, uint32_t, StringHash, StringEqual> registry_;
  std::vector<std::unique_ptr<WorkerState>> worker_states_;
  std::vector<std::unique_ptr<WorkerRecord>> records_;
  WorkerOrdinals ordinals_;
  // Records replaced or removed; freed once neither copy names them.
  std::vector<std::unique_ptr<WorkerRecord>> retired_records_;
  std::vector<int64_t> touched_;          // blocks (and their counters) changed
  std::vector<int64_t> counted_;          // counters raised by a counting Match
  std::vector<uint32_t> worker_changes_;  // ordinals whose table entry changed
  // Pages for base tables; declared before bases_ so that it outlives them.
  MappingPool mapping_pool_;
  // The base table of each shard (nullptr: BaseTable::Empty()).
  std::unique_ptr<BaseTable> bases_[SnapshotCopy::kShards];
  size_t merge_min_delta_ = kMergeMinDelta;
  size_t merge_base_ratio_ = kMergeBaseRatio;
  size_t merge_budget_ = kMergeBudget;
  size_t bulk_merge_base_ratio_ = kMergeBaseRatio / kBulkRatioDivisor;
  uint64_t merges_ = 0;
  uint64_t scans_ = 0;         // passes of ScanForKeys over the index
  uint64_t worker_bytes_ = 0;  // records_ and registry_ keys, on the heap
  uint64_t holdings_bytes_ = 0;
  uint64_t scan_min_ = kScanMinPlacements;
  uint64_t scan_divisor_ = kScanDivisor;
  WriterHook hook_;  // empty unless a test set it
};

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_ROBIN_BACKEND_H_
