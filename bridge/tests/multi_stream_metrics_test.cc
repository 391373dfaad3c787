#include "bridge/multi_stream_metrics.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace multi_stream_metrics_test {

// The value of the sample `name` with exactly `labels`; -1 when absent.
double Sample(const std::vector<MetricFamily>& families,
              const std::string& name, const MetricLabels& labels) {
  for (const MetricFamily& family : families) {
    for (const MetricSample& sample : family.samples) {
      if (sample.name == name && sample.labels == labels) return sample.value;
    }
  }
  return -1;
}

TEST(MultiStreamMetrics, StateNames) {
  EXPECT_EQ(StreamStateName(true, "exact"), "parked");
  EXPECT_EQ(StreamStateName(false, "exact"), "exact");
  EXPECT_EQ(StreamStateName(false, "syncing"), "syncing");
  EXPECT_EQ(StreamStateName(false, "degraded(no_history)"), "degraded");
}

TEST(MultiStreamMetrics, LabelledSeriesAndStateCounts) {
  WorkerEntry a;
  a.worker_id = "a";
  a.stream_namespace = "ns";
  a.dp_rank = 2;
  WorkerEntry b;
  b.worker_id = "b";
  std::vector<StreamView> views(3);
  views[0].entry = &a;
  views[0].stats.state = "exact";
  views[0].stats.messages_received = 7;
  views[0].buffered_batches = 3;
  views[1].entry = &b;
  views[1].stats.state = "degraded(no_history)";
  views[2].entry = &b;  // the same entry twice is fine for the writer
  views[2].parked = true;
  MetricsWriter w;
  WriteMultiStreamSeries(w, views);
  const std::vector<MetricFamily> families = std::move(w).Take();
  const MetricLabels a_labels = {
      {"namespace", "ns"}, {"worker_id", "a"}, {"dp_rank", "2"}};
  EXPECT_EQ(Sample(families, "kvindexer_bridge_messages_total", a_labels), 7);
  EXPECT_EQ(Sample(families, "kvindexer_bridge_live_buffer_batches", a_labels),
            3);
  MetricLabels a_store = a_labels;
  a_store.emplace_back("kind", "store");
  EXPECT_EQ(Sample(families, "kvindexer_bridge_events_total", a_store), 0);
  EXPECT_EQ(Sample(families, "kvindexer_bridge_messages_total", {}), -1);
  EXPECT_EQ(Sample(families, "kvindexer_bridge_streams", {{"state", "exact"}}),
            1);
  EXPECT_EQ(
      Sample(families, "kvindexer_bridge_streams", {{"state", "degraded"}}), 1);
  EXPECT_EQ(Sample(families, "kvindexer_bridge_streams", {{"state", "parked"}}),
            1);
  EXPECT_EQ(
      Sample(families, "kvindexer_bridge_streams", {{"state", "syncing"}}), 0);
}

}  // namespace multi_stream_metrics_test
}  // namespace kvindexer::bridge
