// DoublingThrottle: counts one class of event and says which occurrences to
// log: those whose running total is a power of two (1, 2, 4, 8, ...). The
// first occurrence is always visible, and a sustained stream of them grows a
// log only logarithmically. Used for prefix rejections (server/rejection_log.h)
// and for gated applies refused before the gate (core/sequence_gate_log.h).
//
// Thread safety: Count and total may be called concurrently; the counter is
// an atomic.
#ifndef KVINDEXER_COMMON_DOUBLING_THROTTLE_H_
#define KVINDEXER_COMMON_DOUBLING_THROTTLE_H_

#include <atomic>
#include <cstdint>

namespace kvindexer {

// True for 1, 2, 4, 8, ...
constexpr bool IsPowerOfTwo(uint64_t n) { return n != 0 && (n & (n - 1)) == 0; }

class DoublingThrottle {
 public:
  // Counts one occurrence. Returns the running total when this occurrence
  // should be logged, 0 when it should not.
  uint64_t Count() {
    const uint64_t total = total_.fetch_add(1, std::memory_order_relaxed) + 1;
    return IsPowerOfTwo(total) ? total : 0;
  }
  uint64_t total() const { return total_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> total_{0};
};

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_DOUBLING_THROTTLE_H_
