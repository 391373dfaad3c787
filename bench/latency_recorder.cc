#include "latency_recorder.h"

#include <algorithm>
#include <cmath>

namespace kvindexer::bench {

LatencySummary LatencyRecorder::Summarize() const {
  LatencySummary s;
  const size_t recorded = next_.load(std::memory_order_relaxed);
  const size_t n = std::min(recorded, samples_.size());
  s.count = n;
  s.dropped = recorded - n;
  if (n == 0) return s;
  std::vector<int64_t> sorted(samples_.begin(), samples_.begin() + n);
  std::sort(sorted.begin(), sorted.end());
  double sum = 0;
  for (const int64_t v : sorted) sum += static_cast<double>(v);
  const auto at = [&](double q) {
    const size_t rank =
        static_cast<size_t>(std::ceil(q * static_cast<double>(n))) -
        (q > 0 ? 1 : 0);
    return static_cast<double>(sorted[std::min(rank, n - 1)]) / 1e3;
  };
  s.mean_us = sum / static_cast<double>(n) / 1e3;
  s.p50_us = at(0.50);
  s.p90_us = at(0.90);
  s.p99_us = at(0.99);
  s.p999_us = at(0.999);
  s.max_us = static_cast<double>(sorted.back()) / 1e3;
  return s;
}

}  // namespace kvindexer::bench
