// The blocks map of the absl_rwlock backend: block hash -> { token_count,
// placements (worker, tier) -> component mask } (docs/contract.md,
// "State model").
//
// Layout is kept lean because there is one record per cached block: a
// placement is 8 bytes (worker ordinal and tier packed into one word, mask in
// the other), a block held by one (worker, tier) keeps it inside its 16-byte
// record (PlacementList), and the table's slot is 24 bytes.
//
// Invariant between Apply calls: a record exists only while it has at least
// one placement, and a record holds at most one placement per (worker, tier).
//
// Thread safety: none; the backend's lock guards every call.
#ifndef KVINDEXER_BACKENDS_ABSL_RWLOCK_BLOCK_TABLE_H_
#define KVINDEXER_BACKENDS_ABSL_RWLOCK_BLOCK_TABLE_H_

#include <stddef.h>
#include <stdint.h>

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "kvindexer/backend.h"
#include "placement_list.h"
#include "swiss_table.h"

namespace kvindexer::absl_rwlock {

// Worker ordinals must fit in 30 bits so that (ordinal, tier) packs into 32.
inline constexpr uint32_t kMaxWorkerOrdinal = (uint32_t{1} << 30) - 1;

// (worker ordinal, tier) as one word: ordinal << 2 | tier, tier in 1..3.
inline constexpr uint32_t PlacementKey(uint32_t worker, uint32_t tier) {
  return worker << 2 | tier;
}

struct BlockRecord {
  uint32_t token_count = 0;  // 0 = unknown
  PlacementList placements;  // insertion order

  // Position of the placement with `key`, or -1.
  ptrdiff_t Find(uint32_t key) const {
    for (size_t i = 0; i < placements.size(); ++i) {
      if (placements[i].key == key) return static_cast<ptrdiff_t>(i);
    }
    return -1;
  }

  // Bytes the placement list has spilled to the heap.
  uint64_t HeapBytes() const { return placements.HeapBytes(); }
};
static_assert(sizeof(std::pair<const int64_t, BlockRecord>) == 24,
              "a block's slot in the table should be 24 bytes");

// The map plus O(1) counters of placements and spilled bytes. Methods that
// may allocate say so; they give the strong guarantee (a throw changes
// nothing). Every other method is noexcept.
class BlockTable {
 public:
  using Map = absl::flat_hash_map<int64_t, BlockRecord>;

  BlockRecord* Find(int64_t hash) noexcept {
    auto it = map_.find(hash);
    return it == map_.end() ? nullptr : &it->second;
  }
  const BlockRecord* Find(int64_t hash) const noexcept {
    auto it = map_.find(hash);
    return it == map_.end() ? nullptr : &it->second;
  }

  // Starts loading the memory a lookup of `hash` will read, so that a batch
  // can overlap the cache misses of later hashes with the work on this one.
  void Prefetch(int64_t hash) const noexcept { map_.prefetch(hash); }

  // Returns the record of `hash`, creating an empty one (and setting
  // *created) when there is none. May throw std::bad_alloc. The reference
  // is valid until the next insertion into the table.
  BlockRecord& FindOrCreate(int64_t hash, bool* created) {
    auto it = map_.find(hash);
    *created = it == map_.end();
    if (!*created) return it->second;
    ReserveForInserts(map_, 1);
    return map_.try_emplace(hash).first->second;
  }

  // Appends a placement. May throw std::bad_alloc.
  // REQUIRES: `record` has no placement with p.key.
  void AddPlacement(BlockRecord& record, PackedPlacement p) {
    const uint64_t before = record.HeapBytes();
    record.placements.push_back(p);
    spilled_bytes_ += record.HeapBytes() - before;
    ++placements_;
  }

  // Puts a removed placement back at `index`.
  // REQUIRES: placements.size() < placements.capacity() (no allocation), as
  // holds right after RemovePlacementAt because nothing shrinks the list
  // until ShrinkToInline.
  void RestorePlacementAt(BlockRecord& record, size_t index,
                          PackedPlacement p) noexcept {
    record.placements.insert_at(index, p);
    ++placements_;
  }

  // Removes and returns the placement at `index`. Keeps the capacity.
  PackedPlacement RemovePlacementAt(BlockRecord& record,
                                    size_t index) noexcept {
    const PackedPlacement p = record.placements[index];
    record.placements.erase_at(index);
    --placements_;
    return p;
  }

  // Moves a spilled list back inside the record once it fits there again.
  void ShrinkToInline(BlockRecord& record) noexcept {
    if (record.placements.size() > 1) return;
    const uint64_t before = record.HeapBytes();
    if (before == 0) return;
    record.placements.shrink_to_fit();  // fits inline: no allocation
    spilled_bytes_ -= before - record.HeapBytes();
  }

  // Deletes the record of `hash` if there is one.
  void Erase(int64_t hash) noexcept {
    auto it = map_.find(hash);
    if (it == map_.end()) return;
    spilled_bytes_ -= it->second.HeapBytes();
    placements_ -= it->second.placements.size();
    map_.erase(it);
  }

  // Gives back capacity that deletions left unused (ShrinkIfSparse). May
  // throw std::bad_alloc, in which case nothing changed. Invalidates record
  // references when it rebuilds.
  void Compact() { ShrinkIfSparse(map_); }

  uint64_t size() const noexcept { return map_.size(); }
  uint64_t placements() const noexcept { return placements_; }
  uint64_t MemoryBytes() const noexcept {
    return SwissTableBytes(map_) + spilled_bytes_;
  }

 private:
  Map map_;
  uint64_t placements_ = 0;
  uint64_t spilled_bytes_ = 0;
};

}  // namespace kvindexer::absl_rwlock

#endif  // KVINDEXER_BACKENDS_ABSL_RWLOCK_BLOCK_TABLE_H_
