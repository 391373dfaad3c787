// The per-block record stored in the snapshot tables, and the hash mixing
// that places a block hash in a shard and a bucket.
//
// Layout goals: a block with one placement costs one 24-byte robin_map bucket
// per snapshot copy and nothing else; a block with more placements points to a
// spill array (spill_arena.h) that both copies share. Spill arrays hold
// placements in the ABI layout, so readers hand them to the visitor without
// copying.
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_BLOCK_RECORD_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_BLOCK_RECORD_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hash_key.h"
#include "kvindexer/backend.h"

namespace kvindexer::robin {

// Mixes a block hash under `key`: the 128-bit product of the hash (xored
// with one key word) and the odd key multiplier, its halves folded together
// so that every bit of the hash reaches both the top and the low bits. The
// top bits pick the shard, the low bits the bucket, so that neither
// sequential test hashes nor structured production hashes pile up in one
// place; with a key the client cannot know, neither can crafted ones
// (DESIGN.md, "Keyed hash mixing").
inline uint64_t MixHashWithKey(const HashKey& key, int64_t hash) {
  const unsigned __int128 product =
      static_cast<unsigned __int128>(static_cast<uint64_t>(hash) ^
                                     key.xor_word) *
      key.multiplier;
  return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64);
}

// Mixes a block hash under the process's key (hash_key.h).
inline uint64_t MixHash(int64_t hash) {
  return MixHashWithKey(ProcessHashKey(), hash);
}

// The top kShardBits bits of a mixed hash pick a block's shard.
inline constexpr uint32_t kShardBits = 6;

inline constexpr uint32_t kMaxWorkerOrdinal = (1u << 30) - 1;

// Placements are stored in the ABI's own layout (kvindexer::Placement, 12
// bytes) so that a BlockView can point straight at them. Within a block they
// are sorted by this key: worker ordinal, then tier.
inline constexpr uint32_t PlacementKey(uint32_t worker, uint32_t tier) {
  return (worker << 2) | tier;
}
inline uint32_t PlacementKey(const Placement& p) {
  return PlacementKey(p.worker, p.tier);
}
inline constexpr uint32_t KeyWorker(uint32_t key) { return key >> 2; }
inline constexpr uint32_t KeyTier(uint32_t key) { return key & 3u; }

// A block hash stored with 4-byte alignment so that the robin_map bucket
// (2-byte distance, 1-byte flag, value) packs into 24 bytes instead of 32.
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
    return a.hash() == b.hash();  // one 8-byte comparison
  }
};

struct MixedInt64Hash {
  size_t operator()(int64_t hash) const { return MixHash(hash); }
};

struct BlockKeyHash {
  size_t operator()(const BlockKey& key) const { return MixHash(key.hash()); }
};

// A block: its token count and its placements sorted by key, in 12 bytes.
//   tier bits of `word0` != 0: exactly one placement, packed as
//       word0 = PlacementKey(worker, tier), word1 = mask;
//   tier bits of `word0` == 0: word0/word1 are the low/high halves of the
//       address of a spill array (SpillArena; 8-aligned, so its low bits are
//       0) that carries its own count. Both snapshot copies may point at the
//       same array.
//   word0 == word1 == 0 (a null spill address): a tombstone. Only a shard's
//       delta holds tombstones; one hides the base table's record of a block
//       that has since lost its last placement.
// Otherwise a block with no placement has no record.
struct BlockRecord {
  uint32_t word0;
  uint32_t word1;
  uint32_t token_count;

  static BlockRecord Tombstone() { return BlockRecord{0, 0, 0}; }
  bool tombstone() const { return (word0 | word1) == 0; }
  // REQUIRES: !tombstone().
  bool spilled() const { return (word0 & 3u) == 0; }

  Placement single() const {
    return Placement{KeyWorker(word0), KeyTier(word0), word1};
  }
  void set_single(const Placement& p) {
    word0 = PlacementKey(p);
    word1 = p.mask;
  }

  Placement* spill() const {
    const uintptr_t address = uintptr_t{word0} | (uintptr_t{word1} << 32);
    return reinterpret_cast<Placement*>(address);
  }
  void set_spill(Placement* array) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(array);
    word0 = static_cast<uint32_t>(address);
    word1 = static_cast<uint32_t>(address >> 32);
  }
};

static_assert(alignof(BlockKey) == 4 && alignof(BlockRecord) == 4);
static_assert(sizeof(BlockKey) + sizeof(BlockRecord) == 20);
static_assert(sizeof(uintptr_t) == 8);

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_BLOCK_RECORD_H_
