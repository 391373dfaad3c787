// MetricsRegistry: the metrics of one process.
//
// Two kinds of metric live here:
//   - instruments (Counter, Gauge, Histogram) that code updates as things
//     happen. They are created once, at start-up, under the registry's
//     lock, and the caller keeps the returned reference: updating one never
//     touches the registry, so a hot path pays one or two relaxed atomic
//     operations and nothing else;
//   - collectors: functions called at each scrape that write values read at
//     that moment (a backend's stats, a queue's depth, one gauge per
//     worker), so that nothing on a hot path has to maintain them.
// Collect() reads both into MetricFamily values for common/prometheus_text.h.
//
// Thread safety: every method may be called concurrently. Instruments and
// collectors live as long as the registry. A collector runs on the scraping
// thread and must be thread-safe with respect to what it reads.
#ifndef KVINDEXER_COMMON_METRICS_REGISTRY_H_
#define KVINDEXER_COMMON_METRICS_REGISTRY_H_

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/metrics_counter.h"
#include "common/metrics_family.h"
#include "common/metrics_histogram.h"
#include "common/metrics_writer.h"

namespace kvindexer {

class MetricsRegistry {
 public:
  using Collector = std::function<void(MetricsWriter&)>;

  MetricsRegistry() = default;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Each returns a new instrument with these labels. A counter's name gets
  // `_total` appended unless it has it. REQUIRES: valid names; one name is
  // always registered with the same type (and, for a histogram, is given
  // the same bounds: Prometheus wants every series of a family alike).
  Counter& AddCounter(std::string_view name, std::string_view help,
                      MetricLabels labels = {});
  Gauge& AddGauge(std::string_view name, std::string_view help,
                  MetricLabels labels = {});
  Histogram& AddHistogram(std::string_view name, std::string_view help,
                          std::span<const double> bounds,
                          MetricLabels labels = {});

  void AddCollector(Collector collector);

  // Every instrument, in registration order, then what the collectors
  // write. A collector's family that shares an instrument's name is merged
  // into it.
  std::vector<MetricFamily> Collect() const;

 private:
  struct Entry {
    std::string name;
    std::string help;
    MetricType type;
    MetricLabels labels;
    // Exactly one is set, by type.
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
  };

  mutable std::mutex mu_;
  std::deque<Entry> entries_;          // guarded by mu_
  std::vector<Collector> collectors_;  // guarded by mu_
};

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_METRICS_REGISTRY_H_
