// SnapshotCopy: one of the two reader-visible copies of the index kept by the
// left-right protocol (left_right_gate.h). It holds its own table of the
// workers its placements name (worker_table.h).
//
// Each of the 64 shards has two layers: a delta (a tsl::robin_map of recent
// changes, one per copy) over a base table (base_table.h) that both copies
// share. A delta entry overrides the base; a tombstone in the delta hides a
// base entry whose block has gone.
//
// A copy is immutable while it is live. The writer modifies only the copy that
// is not live; base tables, spill arrays (SpillArena) and worker records are
// shared between the two copies whenever they are equal.
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_SNAPSHOT_COPY_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_SNAPSHOT_COPY_H_

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <type_traits>

#include "base_table.h"
#include "block_record.h"
#include "kvindexer/backend.h"
#include "mapped_allocator.h"
#include "tsl/robin_map.h"
#include "worker_table.h"

namespace kvindexer::robin {

class SnapshotCopy {
 public:
  static constexpr uint32_t kShards = 1u << kShardBits;
  static constexpr float kMaxLoadFactor = 0.75f;

  using Map = tsl::robin_map<BlockKey, BlockRecord, BlockKeyHash,
                             std::equal_to<BlockKey>,
                             MappedAllocator<std::pair<BlockKey, BlockRecord>>,
                             /*StoreHash=*/false>;
  using Bucket =
      tsl::detail_robin_hash::bucket_entry<std::pair<BlockKey, BlockRecord>,
                                           false>;
  // Hit counters, only for blocks that have been counted.
  using CounterMap =
      tsl::robin_map<int64_t, uint64_t, MixedInt64Hash, std::equal_to<int64_t>,
                     MappedAllocator<std::pair<int64_t, uint64_t>>>;
  using CounterBucket =
      tsl::detail_robin_hash::bucket_entry<std::pair<int64_t, uint64_t>, false>;

  SnapshotCopy() {
    for (Shard& shard : shards_) shard.delta.max_load_factor(kMaxLoadFactor);
  }
  SnapshotCopy(const SnapshotCopy&) = delete;
  SnapshotCopy& operator=(const SnapshotCopy&) = delete;

  // The block's record (delta first, then base); nullptr when it is absent.
  // Always inlined: it is the readers' per-block lookup, and GCC stops
  // inlining it into small translation units (queries.cc) on its own.
  [[gnu::always_inline]] const BlockRecord* Find(int64_t hash,
                                                 uint64_t mixed) const {
    const Shard& shard = shards_[ShardOf(mixed)];
    const BlockKey key = BlockKey::From(hash);
    auto it = FindInDelta(shard, key, mixed);
    if (it != shard.delta.end()) {
      return it->second.tombstone() ? nullptr : &it->second;
    }
    return shard.base->Find(key, mixed);
  }

  // The block's delta entry (a record or a tombstone), or delta_for(mixed)
  // .end(); skips the probe when the base's filter rules an entry out.
  Map::iterator FindInDelta(BlockKey key, uint64_t mixed) {
    return FindInDelta(shards_[ShardOf(mixed)], key, mixed);
  }

  // Prefetches the delta bucket and the base directory word a lookup of
  // `mixed` starts with, so that several lookups can wait for memory at once.
  // Relies on robin_map's power-of-two growth policy (the first bucket is
  // mixed & (bucket_count - 1)); it only computes an address. Always inlined
  // (see BaseTable::PrefetchDirectory).
  [[gnu::always_inline]] void Prefetch(uint64_t mixed) const {
    const Shard& shard = shards_[ShardOf(mixed)];
    shard.base->PrefetchDirectory(mixed);
    const size_t buckets = shard.delta.bucket_count();
    if (shard.delta.empty() || !shard.base->MayHaveChanged(mixed)) return;
    __builtin_prefetch(PastLastBucket(shard.delta) -
                       (buckets - (mixed & (buckets - 1))));
  }
  // The second stage: prefetches the base entries (reads the directory).
  [[gnu::always_inline]] void PrefetchBase(uint64_t mixed) const {
    shards_[ShardOf(mixed)].base->PrefetchEntries(mixed);
  }

  // The hit counter of `hash`; 0 when it has none.
  uint64_t Counter(int64_t hash, uint64_t mixed) const {
    const CounterMap& map = shards_[ShardOf(mixed)].counters;
    auto it = map.find(hash, mixed);
    return it == map.end() ? 0 : it->second;
  }

  Map& delta_for(uint64_t mixed) { return shards_[ShardOf(mixed)].delta; }
  const Map& delta_for(uint64_t mixed) const {
    return shards_[ShardOf(mixed)].delta;
  }
  const BaseTable& base_for(uint64_t mixed) const {
    return *shards_[ShardOf(mixed)].base;
  }
  const Map& delta(uint32_t shard) const { return shards_[shard].delta; }
  // REQUIRES: the copy is not live.
  Map& delta(uint32_t shard) { return shards_[shard].delta; }
  const BaseTable& base(uint32_t shard) const { return *shards_[shard].base; }

  // Makes `base` the shard's base table and empties its delta (not freeing
  // the spill arrays its records point to). The delta keeps its buckets when
  // it will need as many again before the next merge (`expected` entries):
  // growing it back from nothing would rehash every entry about twice and
  // map fresh pages at each doubling.
  // REQUIRES: the copy is not live.
  void InstallBase(uint32_t shard, const BaseTable* base,
                   size_t expected) noexcept {
    shards_[shard].base = base;
    Map& delta = shards_[shard].delta;
    if (delta.bucket_count() * kMaxLoadFactor <= 2.0 * expected) {
      delta.clear();  // keeps the buckets (min_load_factor is 0)
      return;
    }
    Map empty;
    empty.max_load_factor(kMaxLoadFactor);
    delta.swap(empty);
  }
  CounterMap& counters_for(uint64_t mixed) {
    return shards_[ShardOf(mixed)].counters;
  }
  const CounterMap& counters(uint32_t shard) const {
    return shards_[shard].counters;
  }
  // REQUIRES: the copy is not live.
  CounterMap& counters(uint32_t shard) { return shards_[shard].counters; }

  // Rebuilds the shard's delta (or counter table) with only the buckets its
  // entries need; an empty one keeps none. Nothing a reader could see
  // changes but the bucket array. REQUIRES: the copy is not live. Throws
  // std::bad_alloc (the table is then unchanged).
  void FitDelta(uint32_t shard) { shards_[shard].delta.rehash(0); }
  void FitCounters(uint32_t shard) { shards_[shard].counters.rehash(0); }

  static uint32_t ShardOf(uint64_t mixed) {
    return static_cast<uint32_t>(mixed >> (64 - kShardBits));
  }

  // Heap bytes of the bucket arrays and the worker table (the shared base
  // tables and worker records not included).
  uint64_t bytes() const {
    uint64_t total = workers.bytes();
    for (const Shard& shard : shards_) {
      total += shard.delta.bucket_count() * sizeof(Bucket) +
               shard.counters.bucket_count() * sizeof(CounterBucket);
    }
    return total;
  }

  // Reader-visible state besides the blocks. Written only while not live.
  WorkerTable workers;
  uint64_t version = 0;
  uint64_t blocks = 0;
  uint64_t placements = 0;
  uint64_t hit_counters = 0;

 private:
  struct alignas(64) Shard {
    Map delta;
    CounterMap counters;
    const BaseTable* base = &BaseTable::Empty();
  };

  // One past the last bucket of `map`, read out of its end() iterator,
  // which holds nothing but that pointer. (Taking the address of end()'s
  // value instead is undefined, and GCC drops code that does it.)
  static const Bucket* PastLastBucket(const Map& map) {
    using Iterator = Map::const_iterator;
    static_assert(sizeof(Iterator) == sizeof(const Bucket*) &&
                  std::is_trivially_copyable_v<Iterator>);
    const Iterator end = map.end();
    const Bucket* past_last;
    std::memcpy(&past_last, &end, sizeof(past_last));
    return past_last;
  }

  template <typename S>
  static auto FindInDelta(S& shard, BlockKey key, uint64_t mixed)
      -> decltype(shard.delta.end()) {
    if (shard.delta.empty() || !shard.base->MayHaveChanged(mixed)) {
      return shard.delta.end();
    }
    return shard.delta.find(key, mixed);
  }

  Shard shards_[kShards];
};

static_assert(sizeof(SnapshotCopy::Bucket) == 24,
              "a block bucket should pack into 24 bytes");

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_SNAPSHOT_COPY_H_
