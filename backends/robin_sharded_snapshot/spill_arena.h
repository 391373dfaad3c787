// SpillArena: storage for the placement arrays of blocks with two or more
// placements.
//
// Arrays come in size classes growing by about 1.5x (2, 3, 4, 6, 8, 12, ...).
// Each array has an 8-byte header in front of its placements: the number of
// placements in use, the class, and a "private" flag meaning "created by the
// current writer step and not yet visible to any reader", which lets the
// writer edit it in place. Classes up to kMaxSlabbedCapacity are carved from
// 64 KiB slabs (64 KiB aligned, so a slot finds its slab by masking) with a
// doubly linked free list per class. A slab whose slots are all free goes back
// to the heap once its class has another slab's worth of free slots, so
// arrays that grow through the classes (a block gaining workers) do not
// strand memory in the smaller classes. Larger arrays are single
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

  // Test only: the allocation after the next `n` throws std::bad_alloc
  // (n < 0: never).
  void FailAllocationsAfterForTesting(int64_t n) { fail_countdown_ = n; }

  // Heap bytes held: slabs (used or free) plus large arrays.
  uint64_t bytes() const { return bytes_; }
  // Arrays allocated and not yet freed.
  uint64_t arrays() const { return arrays_; }

 private:
  static constexpr uint32_t kSlabBytes = 64 * 1024;
  static constexpr uint32_t kSlabHeaderBytes = 16;
  static constexpr uint32_t kMaxSlabbedCapacity = 1536;

  // While a slot is free, its header holds the next free slot's address and
  // the 8 bytes after it the previous one's.
  struct Header {
    uint32_t count;
    uint16_t class_index;
    uint8_t is_private;
    uint8_t unused;
  };
  static_assert(sizeof(Header) == 8);

  // At the start of every slab.
  struct Slab {
    uint32_t class_index;
    uint32_t live;  // slots in use
  };

  struct Class {
    uint32_t capacity = 0;
    uint32_t slot_bytes = 0;  // 0: not slabbed
    uint32_t slots_per_slab = 0;
    uint64_t free_slots = 0;
    Header* free_list = nullptr;
  };

  static Header* HeaderOf(const Placement* array) {
    return reinterpret_cast<Header*>(
        reinterpret_cast<char*>(const_cast<Placement*>(array)) -
        sizeof(Header));
  }
  static Header* NextFree(const Header* slot);
  static Header* PrevFree(const Header* slot);
  static void SetNextFree(Header* slot, Header* next);
  static void SetPrevFree(Header* slot, Header* prev);
  static Slab* SlabOf(const Header* slot) {
    return reinterpret_cast<Slab*>(reinterpret_cast<uintptr_t>(slot) &
                                   ~uintptr_t{kSlabBytes - 1});
  }
  void PushFree(Class& c, Header* slot);
  void Unlink(Class& c, Header* slot);
  Header* AllocateSlot(uint32_t class_index);
  void ReleaseSlab(Class& c, Slab* slab);

  std::vector<Class> classes_;
  tsl::robin_set<Slab*> slabs_;
  tsl::robin_set<Header*> large_;
  uint64_t bytes_ = 0;
  uint64_t arrays_ = 0;
  int64_t fail_countdown_ = -1;
};

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_SPILL_ARENA_H_
