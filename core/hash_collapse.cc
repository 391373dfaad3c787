#include "core/hash_collapse.h"

#include <stddef.h>

#include <algorithm>
#include <random>

namespace kvindexer {
namespace {

// An open-addressing set of int64 reused across calls on one thread. A slot is
// occupied when its stamp equals the current generation, so starting a new
// set costs nothing. The probe sequence uses a per-process seeded mixer so
// that crafted hash values cannot force long probe chains.
class SeenSet {
 public:
  // Empties the set and makes room for `n` insertions.
  void Start(size_t n) {
    size_t capacity = 16;
    while (capacity < 2 * n) capacity <<= 1;
    if (capacity > keys_.size()) {
      keys_.assign(capacity, 0);
      stamps_.assign(capacity, 0);
      generation_ = 0;
    }
    mask_ = keys_.size() - 1;
    if (++generation_ == 0) {  // wrapped: forget every old stamp
      std::fill(stamps_.begin(), stamps_.end(), 0);
      generation_ = 1;
    }
  }

  // Returns true if `key` was not in the set, and adds it.
  bool Insert(int64_t key) {
    size_t i = Mix(static_cast<uint64_t>(key)) & mask_;
    while (stamps_[i] == generation_) {
      if (keys_[i] == key) return false;
      i = (i + 1) & mask_;
    }
    stamps_[i] = generation_;
    keys_[i] = key;
    return true;
  }

 private:
  static uint64_t Seed() {
    static const uint64_t seed = [] {
      std::random_device device;
      return (static_cast<uint64_t>(device()) << 32) ^ device();
    }();
    return seed;
  }

  // splitmix64 finaliser over the seeded key.
  static size_t Mix(uint64_t x) {
    x ^= Seed();
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return static_cast<size_t>(x);
  }

  std::vector<int64_t> keys_;
  std::vector<uint32_t> stamps_;
  uint32_t generation_ = 0;
  size_t mask_ = 0;
};

SeenSet& ThreadSeenSet() {
  thread_local SeenSet set;
  return set;
}

// Index of the first hash that repeats an earlier one, or size when none.
size_t FirstRepeat(HashSpan hashes, SeenSet& seen) {
  seen.Start(hashes.size);
  for (size_t i = 0; i < hashes.size; ++i) {
    if (!seen.Insert(hashes.data[i])) return i;
  }
  return hashes.size;
}

}  // namespace

HashSpan CollapseKeepFirst(HashSpan hashes, std::vector<int64_t>* buffer) {
  if (hashes.size < 2) return hashes;
  SeenSet& seen = ThreadSeenSet();
  const size_t first_repeat = FirstRepeat(hashes, seen);
  if (first_repeat == hashes.size) return hashes;
  // Every hash before first_repeat is distinct and already in `seen`.
  buffer->assign(hashes.data, hashes.data + first_repeat);
  for (size_t i = first_repeat + 1; i < hashes.size; ++i) {
    if (seen.Insert(hashes.data[i])) buffer->push_back(hashes.data[i]);
  }
  return HashSpan{buffer->data(), buffer->size()};
}

ReportArrays CollapseKeepLast(ReportArrays report, ReportBuffer* buffer) {
  const size_t n = report.hashes.size;
  if (n < 2) return report;
  SeenSet& seen = ThreadSeenSet();
  if (FirstRepeat(report.hashes, seen) == n) return report;

  // Walk backwards so that the first time a hash is met is its last
  // occurrence; then restore forward order.
  const bool has_masks = report.masks.size != 0;
  const bool has_sizes = report.sizes.size != 0;
  buffer->hashes.clear();
  buffer->masks.clear();
  buffer->sizes.clear();
  seen.Start(n);
  for (size_t i = n; i-- > 0;) {
    const int64_t hash = report.hashes.data[i];
    if (!seen.Insert(hash)) continue;
    buffer->hashes.push_back(hash);
    if (has_masks) buffer->masks.push_back(report.masks.data[i]);
    if (has_sizes) buffer->sizes.push_back(report.sizes.data[i]);
  }
  std::reverse(buffer->hashes.begin(), buffer->hashes.end());
  std::reverse(buffer->masks.begin(), buffer->masks.end());
  std::reverse(buffer->sizes.begin(), buffer->sizes.end());
  return ReportArrays{
      HashSpan{buffer->hashes.data(), buffer->hashes.size()},
      U32Span{has_masks ? buffer->masks.data() : nullptr, buffer->masks.size()},
      U32Span{has_sizes ? buffer->sizes.data() : nullptr,
              buffer->sizes.size()}};
}

}  // namespace kvindexer
