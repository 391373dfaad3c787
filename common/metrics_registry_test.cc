#include "common/metrics_registry.h"

#include <chrono>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

const MetricFamily* Find(const std::vector<MetricFamily>& families,
                         std::string_view name) {
  for (const MetricFamily& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

TEST(MetricsRegistryTest, CounterNamesGetTotalSuffixOnce) {
  EXPECT_EQ(CounterName("kvindexer_x"), "kvindexer_x_total");
  EXPECT_EQ(CounterName("kvindexer_x_total"), "kvindexer_x_total");
  MetricsRegistry registry;
  registry.AddCounter("kvindexer_a", "A.").Increment(3);
  registry.AddCounter("kvindexer_b_total", "B.").Increment();
  const auto families = registry.Collect();
  ASSERT_NE(Find(families, "kvindexer_a_total"), nullptr);
  ASSERT_NE(Find(families, "kvindexer_b_total"), nullptr);
  EXPECT_EQ(Find(families, "kvindexer_a_total")->samples[0].value, 3);
  EXPECT_EQ(Find(families, "kvindexer_a_total")->type, MetricType::kCounter);
}

TEST(MetricsRegistryTest, SeriesOfOneNameFormOneFamilyInOrder) {
  MetricsRegistry registry;
  Counter& ok =
      registry.AddCounter("kvindexer_calls", "Calls.", {{"code", "OK"}});
  registry.AddGauge("kvindexer_other", "Other.");
  Counter& bad =
      registry.AddCounter("kvindexer_calls", "Calls.", {{"code", "INTERNAL"}});
  ok.Increment(2);
  bad.Increment(5);
  const auto families = registry.Collect();
  ASSERT_EQ(families.size(), 2u);
  EXPECT_EQ(families[0].name, "kvindexer_calls_total");
  ASSERT_EQ(families[0].samples.size(), 2u);
  EXPECT_THAT(families[0].samples[0].labels, ElementsAre(Pair("code", "OK")));
  EXPECT_EQ(families[0].samples[0].value, 2);
  EXPECT_THAT(families[0].samples[1].labels,
              ElementsAre(Pair("code", "INTERNAL")));
  EXPECT_EQ(families[0].samples[1].value, 5);
}

TEST(MetricsRegistryTest, GaugesSetAndAdd) {
  MetricsRegistry registry;
  Gauge& g = registry.AddGauge("kvindexer_g", "G.");
  g.Set(4);
  g.Add(-1.5);
  EXPECT_EQ(registry.Collect()[0].samples[0].value, 2.5);
}

TEST(MetricsRegistryTest, CollectorsRunAtEachScrapeAndMergeByName) {
  MetricsRegistry registry;
  registry.AddGauge("kvindexer_workers", "Workers.", {{"worker_id", "a"}})
      .Set(1);
  int calls = 0;
  registry.AddCollector([&calls](MetricsWriter& writer) {
    ++calls;
    writer.Gauge("kvindexer_workers", "Workers.", calls, {{"worker_id", "b"}});
    writer.Counter("kvindexer_scrapes", "Scrapes.", calls);
  });
  registry.Collect();
  const auto families = registry.Collect();
  EXPECT_EQ(calls, 2);
  const MetricFamily* workers = Find(families, "kvindexer_workers");
  ASSERT_NE(workers, nullptr);
  ASSERT_EQ(workers->samples.size(), 2u);
  EXPECT_EQ(workers->samples[1].value, 2);
  ASSERT_NE(Find(families, "kvindexer_scrapes_total"), nullptr);
}

TEST(MetricsRegistryTest, HistogramCountsIntoInclusiveBuckets) {
  const double bounds[] = {1, 2};
  MetricsRegistry registry;
  Histogram& h = registry.AddHistogram("kvindexer_h_seconds", "H.", bounds);
  h.Observe(1);
  h.Observe(1.5);
  h.Observe(2.5);
  h.ObserveDuration(std::chrono::milliseconds(-5));  // clamped to 0
  const Histogram::Snapshot s = h.Read();
  EXPECT_THAT(s.cumulative, ElementsAre(2, 3, 4));
  EXPECT_EQ(s.count, 4u);
  EXPECT_DOUBLE_EQ(s.sum, 5.0);
  const auto families = registry.Collect();
  ASSERT_EQ(families.size(), 1u);
  EXPECT_EQ(families[0].type, MetricType::kHistogram);
  // Three buckets, _sum and _count.
  EXPECT_EQ(families[0].samples.size(), 5u);
}

TEST(MetricsRegistryTest, ConcurrentIncrementsAreAllCounted) {
  MetricsRegistry registry;
  Counter& c = registry.AddCounter("kvindexer_c", "C.");
  const double bounds[] = {0.5};
  Histogram& h = registry.AddHistogram("kvindexer_h", "H.", bounds);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 10000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        c.Increment();
        h.Observe(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(c.value(), uint64_t{kThreads} * kPerThread);
  EXPECT_EQ(h.Read().count, uint64_t{kThreads} * kPerThread);
  EXPECT_DOUBLE_EQ(h.Read().sum, double{kThreads} * kPerThread);
}

TEST(MetricsRegistryTest, ValidatesNames) {
  EXPECT_TRUE(IsValidMetricName("kvindexer_a:b_1"));
  EXPECT_FALSE(IsValidMetricName("1abc"));
  EXPECT_FALSE(IsValidMetricName("a-b"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_TRUE(IsValidLabelName("worker_id"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
  EXPECT_FALSE(IsValidLabelName("__name__"));
}

}  // namespace
}  // namespace kvindexer
