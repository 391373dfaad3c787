// SpillArena: storage for the placement arrays of blocks with two or more
// placements.
//
// Arrays come in size classes growing by about 1.5x (2, 3, 4, 6, 8, 12, ...).
// Each array has an 8-byte header in front of its placements: the number of
// placements in use, the class, and a "private" flag meaning "created by the
// current writer step and not yet visible to any reader", which lets the
// writer edit it in place. Classes up to kMaxSlabbedCapacity are carved from
// 64 KiB slabs with a free list per class; larger arrays are single
// allocations.
//
// Thread safety: none. Only the writer (under the writer mutex) allocates,
// frees and changes counts, and changes counts only of private arrays.
// Readers read only the count and the placements; the writer may clear the
// private flag (a separate byte) of an array readers are reading.
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_SPILL_ARENA_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_SPILL_ARENA_H_

#include <cstdint>
#include <vector>

#include "block_record.h"
#include "kvindexer/backend.h"
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

  // Returns a private array with room for CapacityFor(count) placements,
  // holding `count` (uninitialised) placements. Throws std::bad_alloc.
  Placement* Allocate(uint32_t count);
  // REQUIRES: `array` came from Allocate on this arena and no reader can reach
  // it any more.
  void Free(Placement* array) noexcept;

  static uint32_t Count(const Placement* array) {
    return HeaderOf(array)->count;
  }
  // REQUIRES: no reader can reach `array`; count <= Capacity(array).
  static void SetCount(Placement* array, uint32_t count) {
    HeaderOf(array)->count = count;
  }
  static bool IsPrivate(const Placement* array) {
    return HeaderOf(array)->is_private != 0;
  }
  static void ClearPrivate(Placement* array) {
    HeaderOf(array)->is_private = 0;
  }
  static uint32_t Capacity(const Placement* array);

  // Heap bytes held: slabs (used or free) plus large arrays.
  uint64_t bytes() const { return bytes_; }

 private:
  static constexpr uint32_t kSlabBytes = 64 * 1024;
  static constexpr uint32_t kMaxSlabbedCapacity = 1536;

  // While a slot is free, its header holds the next free slot's address.
  struct Header {
    uint32_t count;
    uint16_t class_index;
    uint8_t is_private;
    uint8_t unused;
  };
  static_assert(sizeof(Header) == 8);

  struct Class {
    uint32_t capacity = 0;
    uint32_t slot_bytes = 0;
    Header* free_list = nullptr;
  };
  static Header* NextFree(const Header* slot);
  static void SetNextFree(Header* slot, Header* next);

  static Header* HeaderOf(const Placement* array) {
    return reinterpret_cast<Header*>(
        reinterpret_cast<char*>(const_cast<Placement*>(array)) -
        sizeof(Header));
  }
  Header* AllocateSlot(uint32_t class_index);

  std::vector<Class> classes_;
  std::vector<void*> slabs_;
  tsl::robin_set<Header*> large_;
  uint64_t bytes_ = 0;
};

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_SPILL_ARENA_H_
