#include "spill_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>

namespace kvindexer::robin {
namespace {

// Capacities of the size classes: 2, 3, then p and 1.5p for each power of two
// p >= 4, up to 2^31.
const std::vector<uint32_t>& ClassCapacities() {
  static const std::vector<uint32_t> capacities = [] {
    std::vector<uint32_t> c = {2, 3};
    for (uint64_t p = 4; p <= (uint64_t{1} << 31); p *= 2) {
      c.push_back(static_cast<uint32_t>(p));
      if (p + p / 2 <= UINT32_MAX) {
        c.push_back(static_cast<uint32_t>(p + p / 2));
      }
    }
    return c;
  }();
  return capacities;
}

uint32_t ClassIndexFor(uint32_t count) {
  const std::vector<uint32_t>& c = ClassCapacities();
  return static_cast<uint32_t>(std::lower_bound(c.begin(), c.end(), count) -
                               c.begin());
}

// Slabs come straight from mmap, aligned to their size, so that releasing one
// returns its memory to the system (resident size follows bytes()).
void* MapSlab(size_t bytes) {
  void* raw = mmap(nullptr, 2 * bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + bytes - 1) & ~uintptr_t{bytes - 1};
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + 2 * bytes;
  if (end > aligned + bytes) {
    munmap(reinterpret_cast<void*>(aligned + bytes), end - (aligned + bytes));
  }
  return reinterpret_cast<void*>(aligned);
}

void UnmapSlab(void* slab, size_t bytes) { munmap(slab, bytes); }

}  // namespace

SpillArena::Header* SpillArena::NextFree(const Header* slot) {
  Header* next;
  std::memcpy(&next, slot, sizeof(next));
  return next;
}

SpillArena::Header* SpillArena::PrevFree(const Header* slot) {
  Header* prev;
  std::memcpy(&prev, reinterpret_cast<const char*>(slot) + 8, sizeof(prev));
  return prev;
}

void SpillArena::SetNextFree(Header* slot, Header* next) {
  std::memcpy(static_cast<void*>(slot), &next, sizeof(next));
}

void SpillArena::SetPrevFree(Header* slot, Header* prev) {
  std::memcpy(reinterpret_cast<char*>(slot) + 8, &prev, sizeof(prev));
}

SpillArena::SpillArena() {
  for (uint32_t capacity : ClassCapacities()) {
    Class c;
    c.capacity = capacity;
    // 8-byte aligned slots keep every header aligned.
    const uint64_t bytes =
        sizeof(Header) + uint64_t{capacity} * sizeof(Placement);
    if (capacity <= kMaxSlabbedCapacity) {
      c.slot_bytes = static_cast<uint32_t>((bytes + 7) / 8 * 8);
      c.slots_per_slab = (kSlabBytes - kSlabHeaderBytes) / c.slot_bytes;
    }
    classes_.push_back(c);
  }
}

SpillArena::~SpillArena() {
  for (Slab* slab : slabs_) UnmapSlab(slab, kSlabBytes);
  for (Header* slot : large_) ::operator delete(slot);
}

uint32_t SpillArena::CapacityFor(uint32_t count) {
  return ClassCapacities()[ClassIndexFor(count)];
}

uint32_t SpillArena::Capacity(const Placement* array) {
  return ClassCapacities()[HeaderOf(array)->class_index];
}

void SpillArena::PushFree(Class& c, Header* slot) {
  SetNextFree(slot, c.free_list);
  SetPrevFree(slot, nullptr);
  if (c.free_list != nullptr) SetPrevFree(c.free_list, slot);
  c.free_list = slot;
  ++c.free_slots;
}

void SpillArena::Unlink(Class& c, Header* slot) {
  Header* next = NextFree(slot);
  Header* prev = PrevFree(slot);
  if (prev != nullptr) {
    SetNextFree(prev, next);
  } else {
    c.free_list = next;
  }
  if (next != nullptr) SetPrevFree(next, prev);
  --c.free_slots;
}

SpillArena::Header* SpillArena::AllocateSlot(uint32_t class_index) {
  Class& c = classes_[class_index];
  if (c.slot_bytes == 0) {
    const size_t bytes =
        sizeof(Header) + size_t{c.capacity} * sizeof(Placement);
    // (tsl's reserve() rebuilds the table every time, so no reserve here.)
    auto* slot = static_cast<Header*>(::operator new(bytes));
    try {
      large_.insert(slot);
    } catch (...) {
      ::operator delete(slot);
      throw;
    }
    bytes_ += bytes;
    return slot;
  }
  if (c.free_list == nullptr) {
    auto* slab = static_cast<Slab*>(MapSlab(kSlabBytes));
    try {
      slabs_.insert(slab);
    } catch (...) {
      UnmapSlab(slab, kSlabBytes);
      throw;
    }
    bytes_ += kSlabBytes;
    slab->class_index = class_index;
    slab->live = 0;
    char* first = reinterpret_cast<char*>(slab) + kSlabHeaderBytes;
    for (size_t i = c.slots_per_slab; i-- > 0;) {
      PushFree(c, reinterpret_cast<Header*>(first + i * c.slot_bytes));
    }
  }
  Header* slot = c.free_list;
  Unlink(c, slot);
  ++SlabOf(slot)->live;
  return slot;
}

void SpillArena::ReleaseSlab(Class& c, Slab* slab) {
  char* first = reinterpret_cast<char*>(slab) + kSlabHeaderBytes;
  for (size_t i = 0; i < c.slots_per_slab; ++i) {
    Unlink(c, reinterpret_cast<Header*>(first + i * c.slot_bytes));
  }
  slabs_.erase(slab);
  bytes_ -= kSlabBytes;
  UnmapSlab(slab, kSlabBytes);
}

Placement* SpillArena::Allocate(uint32_t count) {
  if (fail_countdown_ >= 0 && fail_countdown_-- == 0) throw std::bad_alloc();
  const uint32_t class_index = ClassIndexFor(count);
  Header* slot = AllocateSlot(class_index);
  slot->count = count;
  slot->class_index = static_cast<uint16_t>(class_index);
  slot->is_private = 1;
  slot->unused = 0;
  ++arrays_;
  return reinterpret_cast<Placement*>(slot + 1);
}

void SpillArena::Free(Placement* array) noexcept {
  Header* slot = HeaderOf(array);
  Class& c = classes_[slot->class_index];
  --arrays_;
  if (c.slot_bytes == 0) {
    large_.erase(slot);
    bytes_ -= sizeof(Header) + size_t{c.capacity} * sizeof(Placement);
    ::operator delete(slot);
    return;
  }
  PushFree(c, slot);
  Slab* slab = SlabOf(slot);
  // Keep one slab's worth of free slots per class so that a slot freed and
  // reallocated at a boundary does not churn slabs.
  if (--slab->live == 0 && c.free_slots >= 2 * uint64_t{c.slots_per_slab}) {
    ReleaseSlab(c, slab);
  }
}

}  // namespace kvindexer::robin
