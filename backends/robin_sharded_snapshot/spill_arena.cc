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
      if (p + p / 2 <= UINT32_MAX)
        c.push_back(static_cast<uint32_t>(p + p / 2));
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

uint64_t Header(uint32_t class_index, uint64_t tag) {
  return (tag << 8) | class_index;
}

uint64_t HeaderOf(const PackedPlacement* array) {
  uint64_t header;
  std::memcpy(&header, reinterpret_cast<const char*>(array) - sizeof(header),
              sizeof(header));
  return header;
}

}  // namespace

SpillArena::SpillArena() {
  for (uint32_t capacity : ClassCapacities()) {
    Class c;
    c.capacity = capacity;
    classes_.push_back(c);
  }
}

SpillArena::~SpillArena() {
  for (uint64_t* slab : slabs_) ::operator delete(slab);
  for (uint64_t* slot : large_) ::operator delete(slot);
}

uint32_t SpillArena::CapacityFor(uint32_t count) {
  return ClassCapacities()[ClassIndexFor(count)];
}

uint64_t SpillArena::Tag(const PackedPlacement* array) {
  return HeaderOf(array) >> 8;
}

uint32_t SpillArena::Capacity(const PackedPlacement* array) {
  return ClassCapacities()[HeaderOf(array) & 0xFF];
}

uint64_t* SpillArena::AllocateSlot(uint32_t class_index) {
  Class& c = classes_[class_index];
  const size_t slot_words = size_t{c.capacity} + 1;
  if (c.capacity > kMaxSlabbedCapacity) {
    large_.reserve(large_.size() + 1);
    auto* slot =
        static_cast<uint64_t*>(::operator new(slot_words * sizeof(uint64_t)));
    large_.insert(slot);
    bytes_ += slot_words * sizeof(uint64_t);
    return slot;
  }
  if (c.free_list == nullptr) {
    slabs_.reserve(slabs_.size() + 1);
    auto* slab = static_cast<uint64_t*>(::operator new(kSlabBytes));
    slabs_.push_back(slab);
    bytes_ += kSlabBytes;
    const size_t slots = kSlabBytes / sizeof(uint64_t) / slot_words;
    for (size_t i = slots; i-- > 0;) {
      uint64_t* slot = slab + i * slot_words;
      *slot = reinterpret_cast<uintptr_t>(c.free_list);
      c.free_list = slot;
    }
  }
  uint64_t* slot = c.free_list;
  c.free_list = reinterpret_cast<uint64_t*>(static_cast<uintptr_t>(*slot));
  return slot;
}

PackedPlacement* SpillArena::Allocate(uint32_t count, uint64_t tag) {
  const uint32_t class_index = ClassIndexFor(count);
  uint64_t* slot = AllocateSlot(class_index);
  *slot = Header(class_index, tag);
  return reinterpret_cast<PackedPlacement*>(slot + 1);
}

void SpillArena::Free(PackedPlacement* array) noexcept {
  uint64_t* slot = reinterpret_cast<uint64_t*>(array) - 1;
  const uint32_t class_index = static_cast<uint32_t>(*slot & 0xFF);
  Class& c = classes_[class_index];
  if (c.capacity > kMaxSlabbedCapacity) {
    large_.erase(slot);
    bytes_ -= (size_t{c.capacity} + 1) * sizeof(uint64_t);
    ::operator delete(slot);
    return;
  }
  *slot = reinterpret_cast<uintptr_t>(c.free_list);
  c.free_list = slot;
}

}  // namespace kvindexer::robin
