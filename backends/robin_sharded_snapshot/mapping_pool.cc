#include "mapping_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <new>

namespace kvindexer::robin {

MappingPool::~MappingPool() {
  for (const Mapping& mapping : cached_) Unmap(mapping);
}

size_t MappingPool::RoundUpToPage(size_t bytes) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

MappingPool::Mapping MappingPool::Map(size_t bytes) {
  bytes = RoundUpToPage(bytes);
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (data == MAP_FAILED) throw std::bad_alloc();
  return Mapping{static_cast<char*>(data), bytes};
}

void MappingPool::Unmap(Mapping mapping) noexcept {
  if (mapping.bytes != 0) munmap(mapping.data, mapping.bytes);
}

void MappingPool::Shrink(Mapping* mapping, size_t bytes) noexcept {
  bytes = RoundUpToPage(bytes);
  if (bytes >= mapping->bytes) return;
  munmap(mapping->data + bytes, mapping->bytes - bytes);
  mapping->bytes = bytes;
  if (bytes == 0) mapping->data = nullptr;
}

MappingPool::Mapping MappingPool::Take(size_t bytes) {
  if (fail_countdown_ >= 0 && fail_countdown_-- == 0) throw std::bad_alloc();
  bytes = RoundUpToPage(bytes);
  if (cached_.empty()) return Map(bytes);
  // The smallest cached mapping that is large enough, else the largest.
  auto fits = cached_.end();
  auto largest = cached_.begin();
  for (auto it = cached_.begin(); it != cached_.end(); ++it) {
    if (it->bytes >= bytes &&
        (fits == cached_.end() || it->bytes < fits->bytes)) {
      fits = it;
    }
    if (it->bytes > largest->bytes) largest = it;
  }
  const auto best = fits != cached_.end() ? fits : largest;
  Mapping mapping = *best;
  if (mapping.bytes < bytes) {
    void* grown = mremap(mapping.data, mapping.bytes, bytes, MREMAP_MAYMOVE);
    if (grown == MAP_FAILED) throw std::bad_alloc();
    mapping = Mapping{static_cast<char*>(grown), bytes};
  }
  cached_.erase(best);
  return mapping;
}

void MappingPool::Give(Mapping mapping) noexcept {
  if (mapping.bytes == 0) return;
  if (cached_.size() < kCached) {
    cached_.push_back(mapping);  // capacity reserved: cannot throw
    return;
  }
  // Keep the largest ones: they serve the most requests without growing.
  auto smallest = std::min_element(
      cached_.begin(), cached_.end(),
      [](const Mapping& a, const Mapping& b) { return a.bytes < b.bytes; });
  if (smallest->bytes < mapping.bytes) std::swap(*smallest, mapping);
  Unmap(mapping);
}

uint64_t MappingPool::cached_bytes() const {
  uint64_t total = 0;
  for (const Mapping& mapping : cached_) total += mapping.bytes;
  return total;
}

}  // namespace kvindexer::robin
