#include "common/metrics_writer.h"

#include <cassert>
#include <utility>

#include "fmt/format.h"

namespace kvindexer {

std::string CounterName(std::string_view name) {
  if (name.ends_with("_total")) return std::string(name);
  return std::string(name) + "_total";
}

MetricFamily& MetricsWriter::FamilyFor(std::string name, std::string_view help,
                                       MetricType type) {
  assert(IsValidMetricName(name));
  if (const auto it = index_.find(name); it != index_.end()) {
    MetricFamily& family = families_[it->second];
    assert(family.type == type);
    return family;
  }
  index_.emplace(name, families_.size());
  families_.push_back(MetricFamily{.name = std::move(name),
                                   .help = std::string(help),
                                   .type = type,
                                   .samples = {}});
  return families_.back();
}

void MetricsWriter::Counter(std::string_view name, std::string_view help,
                            double value, MetricLabels labels) {
  std::string full = CounterName(name);
  MetricFamily& family = FamilyFor(full, help, MetricType::kCounter);
  family.samples.push_back(MetricSample{
      .name = std::move(full), .labels = std::move(labels), .value = value});
}

void MetricsWriter::Gauge(std::string_view name, std::string_view help,
                          double value, MetricLabels labels) {
  MetricFamily& family = FamilyFor(std::string(name), help, MetricType::kGauge);
  family.samples.push_back(MetricSample{
      .name = std::string(name), .labels = std::move(labels), .value = value});
}

void MetricsWriter::Histogram(std::string_view name, std::string_view help,
                              const Histogram::Snapshot& snapshot,
                              MetricLabels labels) {
  MetricFamily& family =
      FamilyFor(std::string(name), help, MetricType::kHistogram);
  const std::string bucket = fmt::format("{}_bucket", name);
  for (size_t i = 0; i < snapshot.cumulative.size(); ++i) {
    MetricLabels with_le = labels;
    with_le.emplace_back("le", i < snapshot.bounds.size()
                                   ? fmt::format("{}", snapshot.bounds[i])
                                   : std::string("+Inf"));
    family.samples.push_back(
        MetricSample{.name = bucket,
                     .labels = std::move(with_le),
                     .value = static_cast<double>(snapshot.cumulative[i])});
  }
  family.samples.push_back(MetricSample{.name = fmt::format("{}_sum", name),
                                        .labels = labels,
                                        .value = snapshot.sum});
  family.samples.push_back(
      MetricSample{.name = fmt::format("{}_count", name),
                   .labels = std::move(labels),
                   .value = static_cast<double>(snapshot.count)});
}

std::vector<MetricFamily> MetricsWriter::Take() && {
  return std::move(families_);
}

}  // namespace kvindexer
