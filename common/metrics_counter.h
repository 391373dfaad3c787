// Counter and Gauge: one labelled value each, updated lock-free.
//
// A Counter only goes up (requests served, rejections); a Gauge is set to
// the current value of something (a queue's depth). Both are written on hot
// paths, so an update is one relaxed atomic operation; a scrape reads them
// without stopping writers. Each sits on its own cache line so that two
// counters bumped by different threads do not slow each other down.
//
// Thread safety: every method may be called concurrently.
#ifndef KVINDEXER_COMMON_METRICS_COUNTER_H_
#define KVINDEXER_COMMON_METRICS_COUNTER_H_

#include <atomic>
#include <cstdint>

namespace kvindexer {

class alignas(64) Counter {
 public:
  void Increment(uint64_t n = 1) {
    value_.fetch_add(n, std::memory_order_relaxed);
  }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

class alignas(64) Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_METRICS_COUNTER_H_
