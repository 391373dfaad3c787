// MappingPool: the writer's cache of page mappings for base tables.
//
// Every merge writes a new base table of a few MB and retires the old one.
// Mapping fresh pages for each costs the kernel more than the merge itself
// (zeroing, page-table and cgroup accounting), so retired tables give their
// pages back here and the next merge takes them, growing them with mremap
// when it needs more. At most kCached mappings are kept; the rest go back to
// the system.
//
// Thread safety: none; the writer (under the writer mutex) owns it.
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_MAPPING_POOL_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_MAPPING_POOL_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvindexer::robin {

class MappingPool {
 public:
  struct Mapping {
    char* data = nullptr;
    size_t bytes = 0;  // a multiple of the page size
  };

  static constexpr size_t kCached = 4;

  MappingPool() { cached_.reserve(kCached); }
  ~MappingPool();
  MappingPool(const MappingPool&) = delete;
  MappingPool& operator=(const MappingPool&) = delete;

  // A read-write mapping of at least `bytes` bytes (rounded up to pages):
  // a cached one when there is one (grown if needed), else a new one. Its
  // contents are unspecified. Throws std::bad_alloc.
  Mapping Take(size_t bytes);
  // Takes `mapping` back (either caches it or unmaps it).
  void Give(Mapping mapping) noexcept;

  // Bytes of the cached mappings.
  uint64_t cached_bytes() const;

  // Test only: the next `n` calls of Take succeed and the one after throws
  // std::bad_alloc (n < 0: none throws).
  void FailAfterForTesting(int64_t n) { fail_countdown_ = n; }

  static size_t RoundUpToPage(size_t bytes);
  // Maps fresh pages; Throws std::bad_alloc.
  static Mapping Map(size_t bytes);
  static void Unmap(Mapping mapping) noexcept;
  // Returns the pages of `*mapping` past `bytes` (rounded up to pages).
  static void Shrink(Mapping* mapping, size_t bytes) noexcept;

 private:
  std::vector<Mapping> cached_;
  int64_t fail_countdown_ = -1;
};

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_MAPPING_POOL_H_
