// MetricFamily: one metric as a scrape reads it (a name, its help text, its
// type and its samples), the plain data that the registry produces and the
// Prometheus text writer (common/prometheus_text.h) renders.
//
// A sample's name is complete: a counter's samples end in `_total`, a
// histogram's in `_bucket`, `_sum` and `_count`.
#ifndef KVINDEXER_COMMON_METRICS_FAMILY_H_
#define KVINDEXER_COMMON_METRICS_FAMILY_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvindexer {

enum class MetricType { kCounter, kGauge, kHistogram };

// The exposition name of a type ("counter", "gauge", "histogram").
std::string_view MetricTypeName(MetricType type);

// Label pairs in the order they are written.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

struct MetricSample {
  std::string name;
  MetricLabels labels;
  double value = 0;
};

struct MetricFamily {
  std::string name;  // a counter's includes its `_total` suffix
  std::string help;
  MetricType type = MetricType::kGauge;
  std::vector<MetricSample> samples;
};

// True for a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) and, without the
// colon, a valid label name.
bool IsValidMetricName(std::string_view name);
bool IsValidLabelName(std::string_view name);

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_METRICS_FAMILY_H_
