// Histogram: counts observations into fixed buckets, Prometheus style.
//
// The bucket bounds are fixed at construction (ascending, finite); an
// observation v lands in the first bucket whose upper bound is >= v, or in
// the implicit +Inf bucket. Buckets are stored per bucket, not cumulatively,
// so an observation costs a short scan of the bounds and two relaxed atomic
// additions (its bucket and the sum); the count is the total of the buckets,
// added up at scrape time. A scrape that runs while observations land may
// see the sum and the buckets one observation apart, which Prometheus
// tolerates.
//
// Thread safety: Observe and Read may be called concurrently.
#ifndef KVINDEXER_COMMON_METRICS_HISTOGRAM_H_
#define KVINDEXER_COMMON_METRICS_HISTOGRAM_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace kvindexer {

// Latency bounds in seconds, 100 us to 10 s: a prefix query takes tens of
// microseconds, a large durable apply milliseconds.
inline constexpr double kLatencyBucketsSeconds[] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};

class Histogram {
 public:
  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // per bound, then +Inf (= count)
    uint64_t count = 0;
    double sum = 0;
  };

  // REQUIRES: `bounds` is strictly ascending and finite.
  explicit Histogram(std::span<const double> bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void Observe(double value) {
    size_t i = 0;
    while (i < bounds_.size() && value > bounds_[i]) ++i;
    buckets_[i].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(value, std::memory_order_relaxed);
  }
  // Observes a duration in seconds; a negative one (a clock stepped back)
  // counts as zero.
  void ObserveDuration(std::chrono::nanoseconds d) {
    Observe(d.count() > 0 ? static_cast<double>(d.count()) * 1e-9 : 0.0);
  }

  Snapshot Read() const;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  const std::vector<double> bounds_;
  // bounds_.size() + 1 buckets, the last one +Inf.
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<double> sum_{0};
};

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_METRICS_HISTOGRAM_H_
