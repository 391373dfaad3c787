#include "common/prometheus_text.h"

#include <limits>
#include <vector>

#include "common/metrics_writer.h"
#include "gtest/gtest.h"

namespace kvindexer {
namespace {

TEST(PrometheusTextTest, EscapesLabelValues) {
  EXPECT_EQ(EscapeLabelValue("plain"), "plain");
  EXPECT_EQ(EscapeLabelValue("a\\b"), "a\\\\b");
  EXPECT_EQ(EscapeLabelValue("say \"hi\""), "say \\\"hi\\\"");
  EXPECT_EQ(EscapeLabelValue("two\nlines"), "two\\nlines");
}

TEST(PrometheusTextTest, EscapesHelpTextButNotQuotes) {
  EXPECT_EQ(EscapeHelpText("a \"b\" \\ c\nd"), "a \"b\" \\\\ c\\nd");
}

TEST(PrometheusTextTest, FormatsValuesShortestAndSpecials) {
  EXPECT_EQ(FormatSampleValue(3), "3");
  EXPECT_EQ(FormatSampleValue(0.25), "0.25");
  EXPECT_EQ(FormatSampleValue(1e-4), "0.0001");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatSampleValue(-std::numeric_limits<double>::infinity()),
            "-Inf");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::quiet_NaN()), "NaN");
}

TEST(PrometheusTextTest, RendersHelpTypeAndLabelledSamples) {
  MetricsWriter writer;
  writer.Counter("kvindexer_requests", "Requests\nserved.", 7,
                 {{"method", "Get"}, {"code", "OK"}});
  writer.Counter("kvindexer_requests_total", "ignored: first help wins", 2,
                 {{"method", "Put"}, {"code", "a\"b"}});
  writer.Gauge("kvindexer_depth", "Queue depth.", 1.5);
  const std::vector<MetricFamily> families = std::move(writer).Take();
  EXPECT_EQ(RenderPrometheusText(families),
            "# HELP kvindexer_requests_total Requests\\nserved.\n"
            "# TYPE kvindexer_requests_total counter\n"
            "kvindexer_requests_total{method=\"Get\",code=\"OK\"} 7\n"
            "kvindexer_requests_total{method=\"Put\",code=\"a\\\"b\"} 2\n"
            "# HELP kvindexer_depth Queue depth.\n"
            "# TYPE kvindexer_depth gauge\n"
            "kvindexer_depth 1.5\n");
}

TEST(PrometheusTextTest, RendersHistogramBucketsSumAndCount) {
  const double bounds[] = {0.001, 0.01, 0.1};
  Histogram histogram(bounds);
  histogram.Observe(0.0005);
  histogram.Observe(0.001);  // a bound is inclusive
  histogram.Observe(0.05);
  histogram.Observe(3);  // +Inf only
  MetricsWriter writer;
  writer.Histogram("kvindexer_latency_seconds", "Latency.", histogram.Read(),
                   {{"method", "M"}});
  const std::vector<MetricFamily> families = std::move(writer).Take();
  EXPECT_EQ(RenderPrometheusText(families),
            "# HELP kvindexer_latency_seconds Latency.\n"
            "# TYPE kvindexer_latency_seconds histogram\n"
            "kvindexer_latency_seconds_bucket{method=\"M\",le=\"0.001\"} 2\n"
            "kvindexer_latency_seconds_bucket{method=\"M\",le=\"0.01\"} 2\n"
            "kvindexer_latency_seconds_bucket{method=\"M\",le=\"0.1\"} 3\n"
            "kvindexer_latency_seconds_bucket{method=\"M\",le=\"+Inf\"} 4\n"
            "kvindexer_latency_seconds_sum{method=\"M\"} 3.0515\n"
            "kvindexer_latency_seconds_count{method=\"M\"} 4\n");
}

TEST(PrometheusTextTest, EmptyInputRendersNothing) {
  EXPECT_EQ(RenderPrometheusText({}), "");
}

}  // namespace
}  // namespace kvindexer
