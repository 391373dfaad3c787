// ZipfSampler: draws ranks 0..n-1 with probability proportional to
// 1 / (rank + 1)^s, by binary search over a precomputed CDF.
//
// Thread safety: Sample is const and may be called concurrently with distinct
// generators.
#ifndef KVINDEXER_BENCH_ZIPF_SAMPLER_H_
#define KVINDEXER_BENCH_ZIPF_SAMPLER_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace kvindexer::bench {

class ZipfSampler {
 public:
  // REQUIRES: n > 0, s >= 0.
  ZipfSampler(uint32_t n, double s) : cdf_(n) {
    double sum = 0;
    for (uint32_t i = 0; i < n; ++i) {
      sum += 1.0 / std::pow(static_cast<double>(i) + 1.0, s);
      cdf_[i] = sum;
    }
    for (double& c : cdf_) c /= sum;
  }

  template <typename Rng>
  uint32_t Sample(Rng& rng) const {
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    const auto it = std::lower_bound(cdf_.begin(), cdf_.end(), u);
    if (it == cdf_.end()) return static_cast<uint32_t>(cdf_.size() - 1);
    return static_cast<uint32_t>(it - cdf_.begin());
  }

 private:
  std::vector<double> cdf_;
};

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_ZIPF_SAMPLER_H_
