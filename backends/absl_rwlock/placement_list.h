// PlacementList: the placements of one block in 12 bytes, 4-byte aligned.
//
// A block held by one (worker, tier) keeps its placement inline; a block
// with more keeps the address of a heap array (an 8-byte capacity header,
// then the placements) in the same 8 bytes. Together with the token count a
// block record is 16 bytes, so a (hash, record) slot of the Swiss table is
// 24, where absl::InlinedVector made it 40.
//
// Order is insertion order; erase shifts the rest down and keeps the
// capacity, so a placement removed and put back at its index never
// allocates (the rollback of a batch relies on this).
//
// Thread safety: none.
#ifndef KVINDEXER_BACKENDS_ABSL_RWLOCK_PLACEMENT_LIST_H_
#define KVINDEXER_BACKENDS_ABSL_RWLOCK_PLACEMENT_LIST_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <new>

#include "kvindexer/backend.h"

namespace kvindexer::absl_rwlock {

// One placement in 8 bytes.
struct PackedPlacement {
  uint32_t key;   // PlacementKey(worker, tier)
  uint32_t mask;  // component mask, 0 for legacy whole-block reports

  uint32_t worker() const { return key >> 2; }
  uint32_t tier() const { return key & 3u; }
  Placement Unpack() const { return Placement{worker(), tier(), mask}; }
};

class PlacementList {
 public:
  PlacementList() noexcept : size_(0), on_heap_(0) { storage_.single = {}; }
  PlacementList(PlacementList&& other) noexcept
      : size_(other.size_), on_heap_(other.on_heap_), storage_(other.storage_) {
    other.size_ = 0;
    other.on_heap_ = 0;
  }
  PlacementList& operator=(PlacementList&& other) noexcept {
    if (this != &other) {
      Release();
      size_ = other.size_;
      on_heap_ = other.on_heap_;
      storage_ = other.storage_;
      other.size_ = 0;
      other.on_heap_ = 0;
    }
    return *this;
  }
  PlacementList(const PlacementList&) = delete;
  PlacementList& operator=(const PlacementList&) = delete;
  ~PlacementList() { Release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return on_heap_ ? Header()->capacity : 1; }

  PackedPlacement* data() { return on_heap_ ? Items() : &storage_.single; }
  const PackedPlacement* data() const {
    return const_cast<PlacementList*>(this)->data();
  }
  PackedPlacement& operator[](size_t i) { return data()[i]; }
  const PackedPlacement& operator[](size_t i) const { return data()[i]; }

  // Appends `p`. Throws std::bad_alloc, leaving the list unchanged.
  void push_back(PackedPlacement p) {
    if (size_ == capacity()) Grow(size_ == 0 ? 1 : 2 * capacity());
    data()[size_++] = p;
  }

  // Inserts `p` at `index`. REQUIRES: index <= size() < capacity().
  void insert_at(size_t index, PackedPlacement p) noexcept {
    PackedPlacement* d = data();
    memmove(d + index + 1, d + index, (size_ - index) * sizeof(*d));
    d[index] = p;
    ++size_;
  }

  // Removes the placement at `index`, keeping the capacity.
  void erase_at(size_t index) noexcept {
    PackedPlacement* d = data();
    memmove(d + index, d + index + 1, (size_ - index - 1) * sizeof(*d));
    --size_;
  }

  // Moves a list of at most one placement back inline; never allocates.
  void shrink_to_fit() noexcept {
    if (!on_heap_ || size_ > 1) return;
    HeapHeader* header = Header();
    const PackedPlacement kept = size_ == 1 ? Items()[0] : PackedPlacement{};
    ::operator delete(header);
    on_heap_ = 0;
    storage_.single = kept;
  }

  // Bytes of the heap array; 0 while inline.
  uint64_t HeapBytes() const {
    return on_heap_ ? sizeof(HeapHeader) +
                          uint64_t{Header()->capacity} * sizeof(PackedPlacement)
                    : 0;
  }

 private:
  struct HeapHeader {
    uint32_t capacity;
    uint32_t unused;
  };
  static_assert(sizeof(HeapHeader) == sizeof(PackedPlacement));

  HeapHeader* Header() const {
    const uintptr_t address =
        uintptr_t{storage_.address.lo} | (uintptr_t{storage_.address.hi} << 32);
    return reinterpret_cast<HeapHeader*>(address);
  }
  PackedPlacement* Items() const {
    return reinterpret_cast<PackedPlacement*>(Header() + 1);
  }

  void Grow(size_t capacity) {
    auto* header = static_cast<HeapHeader*>(::operator new(
        sizeof(HeapHeader) + capacity * sizeof(PackedPlacement)));
    header->capacity = static_cast<uint32_t>(capacity);
    header->unused = 0;
    memcpy(header + 1, data(), size_ * sizeof(PackedPlacement));
    Release();
    on_heap_ = 1;
    const auto address = reinterpret_cast<uintptr_t>(header);
    storage_.address.lo = static_cast<uint32_t>(address);
    storage_.address.hi = static_cast<uint32_t>(address >> 32);
  }

  void Release() noexcept {
    if (on_heap_) ::operator delete(Header());
    on_heap_ = 0;
  }

  // Inline: the placement. On the heap: the array's address, in two halves
  // so that the list stays 4-byte aligned.
  union Storage {
    PackedPlacement single;
    struct {
      uint32_t lo;
      uint32_t hi;
    } address;
  };

  uint32_t size_ : 31;
  uint32_t on_heap_ : 1;
  Storage storage_;
};

static_assert(sizeof(PlacementList) == 12 && alignof(PlacementList) == 4);

}  // namespace kvindexer::absl_rwlock

#endif  // KVINDEXER_BACKENDS_ABSL_RWLOCK_PLACEMENT_LIST_H_
