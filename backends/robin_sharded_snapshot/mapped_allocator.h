// MappedAllocator: a standard allocator that takes large blocks straight from
// the kernel.
//
// The backend replaces big arrays wholesale: a shard's delta table is dropped
// after every merge and regrown, and base directories are rebuilt. Through
// malloc, glibc raises its mmap threshold after the first large free, so later
// arrays of that size come from the heap, and the heap holes left when they
// are freed keep the process's RSS far above the index's size. Mapping every
// array of kMapBytes or more and unmapping it on release keeps RSS equal to
// what the index holds.
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_MAPPED_ALLOCATOR_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_MAPPED_ALLOCATOR_H_

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>

namespace kvindexer::robin {

inline constexpr size_t kMapBytes = 128 * 1024;

template <typename T>
class MappedAllocator {
 public:
  using value_type = T;

  MappedAllocator() = default;
  template <typename U>
  MappedAllocator(const MappedAllocator<U>&) noexcept {}  // NOLINT

  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
    const size_t bytes = n * sizeof(T);
    if (bytes < kMapBytes) return static_cast<T*>(::operator new(bytes));
    void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (memory == MAP_FAILED) throw std::bad_alloc();
    return static_cast<T*>(memory);
  }

  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes < kMapBytes) {
      ::operator delete(p);
    } else {
      munmap(p, bytes);
    }
  }

  friend bool operator==(const MappedAllocator&, const MappedAllocator&) {
    return true;
  }
};

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_MAPPED_ALLOCATOR_H_
