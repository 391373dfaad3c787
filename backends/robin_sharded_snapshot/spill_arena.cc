#include "spill_arena.h"

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

}  // namespace

SpillArena::Header* SpillArena::NextFree(const Header* slot) {
  Header* next;
  std::memcpy(&next, slot, sizeof(next));
  return next;
}

void SpillArena::SetNextFree(Header* slot, Header* next) {
  std::memcpy(slot, &next, sizeof(next));
}

SpillArena::SpillArena() {
  for (uint32_t capacity : ClassCapacities()) {
    Class c;
    c.capacity = capacity;
    // 8-byte aligned slots keep every header aligned.
    const uint64_t bytes =
        sizeof(Header) + uint64_t{capacity} * sizeof(Placement);
    c.slot_bytes = capacity <= kMaxSlabbedCapacity
                       ? static_cast<uint32_t>((bytes + 7) / 8 * 8)
                       : 0;
    classes_.push_back(c);
  }
}

SpillArena::~SpillArena() {
  for (void* slab : slabs_) ::operator delete(slab);
  for (Header* slot : large_) ::operator delete(slot);
}

uint32_t SpillArena::CapacityFor(uint32_t count) {
  return ClassCapacities()[ClassIndexFor(count)];
}

uint32_t SpillArena::Capacity(const Placement* array) {
  return ClassCapacities()[HeaderOf(array)->class_index];
}

SpillArena::Header* SpillArena::AllocateSlot(uint32_t class_index) {
  Class& c = classes_[class_index];
  if (c.slot_bytes == 0) {
    const size_t bytes =
        sizeof(Header) + size_t{c.capacity} * sizeof(Placement);
    large_.reserve(large_.size() + 1);
    auto* slot = static_cast<Header*>(::operator new(bytes));
    large_.insert(slot);
    bytes_ += bytes;
    return slot;
  }
  if (c.free_list == nullptr) {
    slabs_.reserve(slabs_.size() + 1);
    char* slab = static_cast<char*>(::operator new(kSlabBytes));
    slabs_.push_back(slab);
    bytes_ += kSlabBytes;
    const size_t slots = kSlabBytes / c.slot_bytes;
    for (size_t i = slots; i-- > 0;) {
      auto* slot = reinterpret_cast<Header*>(slab + i * c.slot_bytes);
      SetNextFree(slot, c.free_list);
      c.free_list = slot;
    }
  }
  Header* slot = c.free_list;
  c.free_list = NextFree(slot);
  return slot;
}

Placement* SpillArena::Allocate(uint32_t count) {
  const uint32_t class_index = ClassIndexFor(count);
  Header* slot = AllocateSlot(class_index);
  slot->count = count;
  slot->class_index = static_cast<uint16_t>(class_index);
  slot->is_private = 1;
  slot->unused = 0;
  return reinterpret_cast<Placement*>(slot + 1);
}

void SpillArena::Free(Placement* array) noexcept {
  Header* slot = HeaderOf(array);
  Class& c = classes_[slot->class_index];
  if (c.slot_bytes == 0) {
    large_.erase(slot);
    bytes_ -= sizeof(Header) + size_t{c.capacity} * sizeof(Placement);
    ::operator delete(slot);
    return;
  }
  SetNextFree(slot, c.free_list);
  c.free_list = slot;
}

}  // namespace kvindexer::robin
