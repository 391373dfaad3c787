// MetricsWriter: where a scrape-time collector writes the values it reads
// at that moment (a backend's stats, a queue's depth, one gauge per worker).
//
// Samples written under the same name join one family; the first write of
// a name fixes its help text and type. A counter's name gets the `_total`
// suffix when it lacks it.
//
// Thread safety: none; one scrape owns a writer.
#ifndef KVINDEXER_COMMON_METRICS_WRITER_H_
#define KVINDEXER_COMMON_METRICS_WRITER_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/metrics_family.h"
#include "common/metrics_histogram.h"

namespace kvindexer {

// `name` with `_total` appended unless it already ends in it.
std::string CounterName(std::string_view name);

class MetricsWriter {
 public:
  // REQUIRES (all three): a valid metric name and valid label names; a name
  // is always written with the same type.
  void Counter(std::string_view name, std::string_view help, double value,
               MetricLabels labels = {});
  void Gauge(std::string_view name, std::string_view help, double value,
             MetricLabels labels = {});
  void Histogram(std::string_view name, std::string_view help,
                 const Histogram::Snapshot& snapshot, MetricLabels labels = {});

  // The families written so far, in the order their names first appeared.
  std::vector<MetricFamily> Take() &&;

 private:
  MetricFamily& FamilyFor(std::string name, std::string_view help,
                          MetricType type);

  std::vector<MetricFamily> families_;
  std::map<std::string, size_t, std::less<>> index_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_METRICS_WRITER_H_
