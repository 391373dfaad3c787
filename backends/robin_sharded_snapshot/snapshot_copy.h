// SnapshotCopy: one of the two reader-visible copies of the index kept by the
// left-right protocol (left_right_gate.h), and the published worker table it
// points at.
//
// A copy is immutable while it is live. The writer modifies only the copy that
// is not live; spill arrays (SpillArena) and worker records are shared between
// the two copies whenever they are equal.
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_SNAPSHOT_COPY_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_SNAPSHOT_COPY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "block_record.h"
#include "kvindexer/backend.h"
#include "tsl/robin_map.h"

namespace kvindexer::robin {

// A worker as readers see it. Immutable once published; a change of address
// or spec publishes a new record.
struct WorkerRecord {
  std::string id;
  std::string address;
  uint32_t has_cache_spec = 0;
  CacheSpec cache_spec{};
};

// Every worker ever seen, indexed by ordinal. Immutable once published.
struct WorkerTable {
  std::vector<const WorkerRecord*> records;
};

class SnapshotCopy {
 public:
  static constexpr uint32_t kShardBits = 6;
  static constexpr uint32_t kShards = 1u << kShardBits;
  static constexpr float kMaxLoadFactor = 0.75f;

  using Map = tsl::robin_map<BlockKey, BlockRecord, BlockKeyHash,
                             std::equal_to<BlockKey>,
                             std::allocator<std::pair<BlockKey, BlockRecord>>,
                             /*StoreHash=*/false>;
  using Bucket =
      tsl::detail_robin_hash::bucket_entry<std::pair<BlockKey, BlockRecord>,
                                           false>;
  // Hit counters, only for blocks that have been counted.
  using CounterMap = tsl::robin_map<int64_t, uint64_t, MixedInt64Hash>;
  using CounterBucket =
      tsl::detail_robin_hash::bucket_entry<std::pair<int64_t, uint64_t>, false>;

  SnapshotCopy() {
    for (Shard& shard : shards_) shard.map.max_load_factor(kMaxLoadFactor);
  }
  SnapshotCopy(const SnapshotCopy&) = delete;
  SnapshotCopy& operator=(const SnapshotCopy&) = delete;

  const BlockRecord* Find(int64_t hash, uint64_t mixed) const {
    const Map& map = shards_[ShardOf(mixed)].map;
    auto it = map.find(BlockKey::From(hash), mixed);
    return it == map.end() ? nullptr : &it->second;
  }

  // Prefetches the bucket where a lookup of `mixed` starts, so that several
  // lookups can wait for memory at once. Relies on robin_map's power-of-two
  // growth policy (the first bucket is mixed & (bucket_count - 1)) and on
  // end() designating one past the last bucket; it only computes an address.
  void Prefetch(uint64_t mixed) const {
    const Map& map = shards_[ShardOf(mixed)].map;
    const size_t buckets = map.bucket_count();
    if (buckets == 0) return;
    const char* past_end =
        reinterpret_cast<const char*>(map.end().operator->());
    __builtin_prefetch(past_end -
                       (buckets - (mixed & (buckets - 1))) * sizeof(Bucket));
  }

  // The hit counter of `hash`; 0 when it has none.
  uint64_t Counter(int64_t hash, uint64_t mixed) const {
    const CounterMap& map = shards_[ShardOf(mixed)].counters;
    auto it = map.find(hash, mixed);
    return it == map.end() ? 0 : it->second;
  }

  Map& map_for(uint64_t mixed) { return shards_[ShardOf(mixed)].map; }
  CounterMap& counters_for(uint64_t mixed) {
    return shards_[ShardOf(mixed)].counters;
  }

  // Heap bytes of the bucket arrays.
  uint64_t bytes() const {
    uint64_t total = 0;
    for (const Shard& shard : shards_) {
      total += shard.map.bucket_count() * sizeof(Bucket) +
               shard.counters.bucket_count() * sizeof(CounterBucket);
    }
    return total;
  }

  // Reader-visible state besides the blocks. Written only while not live.
  const WorkerTable* workers = nullptr;
  uint64_t version = 0;
  uint64_t blocks = 0;
  uint64_t placements = 0;
  uint64_t hit_counters = 0;

 private:
  struct alignas(64) Shard {
    Map map;
    CounterMap counters;
  };

  static uint32_t ShardOf(uint64_t mixed) {
    return static_cast<uint32_t>(mixed >> (64 - kShardBits));
  }

  Shard shards_[kShards];
};

static_assert(sizeof(SnapshotCopy::Bucket) == 24,
              "a block bucket should pack into 24 bytes");

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_SNAPSHOT_COPY_H_
