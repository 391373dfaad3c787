// The per-block record stored in the snapshot tables, and the hash mixing
// that places a block hash in a shard and a bucket.
//
// Layout goals: a block with one placement costs one 28-byte robin_map bucket
// per snapshot copy and nothing else; a block with more placements points to a
// spill array (spill_arena.h) that both copies share.
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_BLOCK_RECORD_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_BLOCK_RECORD_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kvindexer::robin {

// Mixes a block hash. The top bits pick the shard, the low bits the bucket,
// so that neither sequential test hashes nor structured production hashes
// pile up in one place.
inline uint64_t MixHash(int64_t hash) {
  const unsigned __int128 product =
      static_cast<unsigned __int128>(static_cast<uint64_t>(hash) ^
                                     0x9E3779B97F4A7C15ull) *
      0xD6E8FEB86659FD93ull;
  return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64);
}

// One (worker, tier) -> mask entry, packed into 8 bytes. `key` orders the
// placements of a block: worker ordinal in the high 30 bits, tier in the low
// 2 bits.
struct PackedPlacement {
  uint32_t key;
  uint32_t mask;
};

inline constexpr uint32_t kMaxWorkerOrdinal = (1u << 30) - 1;

inline constexpr uint32_t PlacementKey(uint32_t worker, uint32_t tier) {
  return (worker << 2) | tier;
}
inline constexpr uint32_t KeyWorker(uint32_t key) { return key >> 2; }
inline constexpr uint32_t KeyTier(uint32_t key) { return key & 3u; }

// A block hash stored with 4-byte alignment so that the robin_map bucket
// (2-byte distance, 1-byte flag, value) packs into 28 bytes instead of 32.
struct BlockKey {
  uint32_t lo;
  uint32_t hi;

  static BlockKey From(int64_t hash) {
    BlockKey key;
    std::memcpy(&key, &hash, sizeof(key));
    return key;
  }
  int64_t hash() const {
    int64_t hash;
    std::memcpy(&hash, this, sizeof(hash));
    return hash;
  }
  friend bool operator==(const BlockKey& a, const BlockKey& b) {
    return a.lo == b.lo && a.hi == b.hi;
  }
};

struct MixedInt64Hash {
  size_t operator()(int64_t hash) const { return MixHash(hash); }
};

struct BlockKeyHash {
  size_t operator()(const BlockKey& key) const { return MixHash(key.hash()); }
};

// A block: its token count and its placements sorted by key.
//   count == 1: `one` holds the placement inline;
//   count >= 2: `one` holds the address of a spill array of `count`
//               placements (see SpillArena); both snapshot copies may point at
//               the same array.
// A record with count == 0 never exists: the block is deleted instead.
struct BlockRecord {
  uint32_t token_count;
  uint32_t count;
  PackedPlacement one;

  const PackedPlacement* placements() const {
    return count == 1 ? &one : spill();
  }
  PackedPlacement* spill() const {
    uintptr_t address;
    static_assert(sizeof(address) == sizeof(one));
    std::memcpy(&address, &one, sizeof(address));
    return reinterpret_cast<PackedPlacement*>(address);
  }
  void set_spill(PackedPlacement* array) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(array);
    std::memcpy(&one, &address, sizeof(address));
  }
  bool has_spill() const { return count >= 2; }
};

static_assert(alignof(BlockKey) == 4 && alignof(BlockRecord) == 4);
static_assert(sizeof(BlockKey) + sizeof(BlockRecord) == 24);

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_BLOCK_RECORD_H_
