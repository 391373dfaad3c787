// LatencyRecorder: a fixed-capacity store of latency samples with percentile
// summaries. Samples beyond the capacity are counted, not stored.
//
// Thread safety: Record may be called concurrently from any thread.
// Summarize requires that no Record runs concurrently (callers wait for their
// RPCs to finish first).
#ifndef KVINDEXER_BENCH_LATENCY_RECORDER_H_
#define KVINDEXER_BENCH_LATENCY_RECORDER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvindexer::bench {

struct LatencySummary {
  uint64_t count = 0;    // samples stored
  uint64_t dropped = 0;  // samples beyond the capacity
  double mean_us = 0;
  double p50_us = 0;
  double p90_us = 0;
  double p99_us = 0;
  double p999_us = 0;
  double max_us = 0;
};

class LatencyRecorder {
 public:
  explicit LatencyRecorder(size_t capacity) : samples_(capacity) {}

  void Record(int64_t nanos) noexcept {
    const size_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i < samples_.size()) samples_[i] = nanos;
  }

  LatencySummary Summarize() const;

 private:
  std::vector<int64_t> samples_;
  std::atomic<size_t> next_{0};
};

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_LATENCY_RECORDER_H_
