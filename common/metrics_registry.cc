#include "common/metrics_registry.h"

#include <utility>

namespace kvindexer {

Counter& MetricsRegistry::AddCounter(std::string_view name,
                                     std::string_view help,
                                     MetricLabels labels) {
  auto counter = std::make_unique<Counter>();
  Counter& result = *counter;
  const std::lock_guard lock(mu_);
  entries_.push_back(Entry{.name = CounterName(name),
                           .help = std::string(help),
                           .type = MetricType::kCounter,
                           .labels = std::move(labels),
                           .counter = std::move(counter),
                           .gauge = nullptr,
                           .histogram = nullptr});
  return result;
}

Gauge& MetricsRegistry::AddGauge(std::string_view name, std::string_view help,
                                 MetricLabels labels) {
  auto gauge = std::make_unique<Gauge>();
  Gauge& result = *gauge;
  const std::lock_guard lock(mu_);
  entries_.push_back(Entry{.name = std::string(name),
                           .help = std::string(help),
                           .type = MetricType::kGauge,
                           .labels = std::move(labels),
                           .counter = nullptr,
                           .gauge = std::move(gauge),
                           .histogram = nullptr});
  return result;
}

Histogram& MetricsRegistry::AddHistogram(std::string_view name,
                                         std::string_view help,
                                         std::span<const double> bounds,
                                         MetricLabels labels) {
  auto histogram = std::make_unique<Histogram>(bounds);
  Histogram& result = *histogram;
  const std::lock_guard lock(mu_);
  entries_.push_back(Entry{.name = std::string(name),
                           .help = std::string(help),
                           .type = MetricType::kHistogram,
                           .labels = std::move(labels),
                           .counter = nullptr,
                           .gauge = nullptr,
                           .histogram = std::move(histogram)});
  return result;
}

void MetricsRegistry::AddCollector(Collector collector) {
  const std::lock_guard lock(mu_);
  collectors_.push_back(std::move(collector));
}

std::vector<MetricFamily> MetricsRegistry::Collect() const {
  MetricsWriter writer;
  std::vector<Collector> collectors;
  {
    const std::lock_guard lock(mu_);
    for (const Entry& entry : entries_) {
      switch (entry.type) {
        case MetricType::kCounter:
          writer.Counter(entry.name, entry.help,
                         static_cast<double>(entry.counter->value()),
                         entry.labels);
          break;
        case MetricType::kGauge:
          writer.Gauge(entry.name, entry.help, entry.gauge->value(),
                       entry.labels);
          break;
        case MetricType::kHistogram:
          writer.Histogram(entry.name, entry.help, entry.histogram->Read(),
                           entry.labels);
          break;
      }
    }
    collectors = collectors_;
  }
  // Outside the lock: a collector may take locks of its own (the Indexer's
  // mutation mutex) and must not hold up registration.
  for (const Collector& collector : collectors) collector(writer);
  return std::move(writer).Take();
}

}  // namespace kvindexer
