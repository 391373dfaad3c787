// SpillArena: storage for the placement arrays of blocks with two or more
// placements.
//
// Arrays come in size classes growing by about 1.5x (2, 3, 4, 6, 8, 12, ...).
// An array always has exactly CapacityFor(count) slots for the count it holds,
// so its capacity follows from its record. Each array carries one 8-byte header
// in front of the placements: the class and the tag (the apply sequence number
// that created it). Classes up to kMaxSlabbedCapacity are carved from 64 KiB
// slabs with a free list per class; larger arrays are single allocations.
//
// Thread safety: none. Only the writer (under the writer mutex) allocates and
// frees; readers only read arrays that the snapshot protocol keeps alive.
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_SPILL_ARENA_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_SPILL_ARENA_H_

#include <cstdint>
#include <vector>

#include "block_record.h"
#include "tsl/robin_set.h"

namespace kvindexer::robin {

class SpillArena {
 public:
  SpillArena();
  ~SpillArena();
  SpillArena(const SpillArena&) = delete;
  SpillArena& operator=(const SpillArena&) = delete;

  // Slots in the array class used for `count` placements (count >= 2).
  static uint32_t CapacityFor(uint32_t count);

  // Returns an array of CapacityFor(count) placements tagged `tag`; its
  // contents are uninitialised. Throws std::bad_alloc.
  PackedPlacement* Allocate(uint32_t count, uint64_t tag);
  // REQUIRES: `array` came from Allocate on this arena and no reader can reach
  // it any more.
  void Free(PackedPlacement* array) noexcept;

  static uint64_t Tag(const PackedPlacement* array);
  static uint32_t Capacity(const PackedPlacement* array);

  // Heap bytes held: slabs (used or free) plus large arrays.
  uint64_t bytes() const { return bytes_; }

 private:
  static constexpr uint32_t kSlabBytes = 64 * 1024;
  static constexpr uint32_t kMaxSlabbedCapacity = 1023;

  struct Class {
    uint32_t capacity = 0;
    uint64_t* free_list = nullptr;  // slots linked through their header word
  };

  uint64_t* AllocateSlot(uint32_t class_index);

  std::vector<Class> classes_;
  std::vector<uint64_t*> slabs_;
  tsl::robin_set<uint64_t*> large_;
  uint64_t bytes_ = 0;
};

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_SPILL_ARENA_H_
