// The prefix reuse series (server/prefix_hit_metrics.h) after real
// MatchExternalKvPrefix calls through the service over 127.0.0.1, read
// from the registry as a scrape renders it.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "common/metrics_registry.h"
#include "common/prometheus_text.h"
#include "core/indexer.h"
#include "core/request_limits.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "server/admin_service.h"
#include "server/kv_indexer_service.h"
#include "server/server_metrics.h"
#include "tests/support/in_process_server.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"

namespace kvindexer::prefix_hit_metrics_test {
namespace {

namespace v1 = ::kv_indexer::v1;
using namespace std::chrono_literals;
using test_support::Batch;
using test_support::Hashes;
using test_support::ModelBackend;
using test_support::PrefixRequest;
using test_support::ScrapedValue;

std::unique_ptr<grpc::ClientContext> CallContext() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + 30s);
  return context;
}

// The KVIndexer and admin services on one port, with the server's metrics
// and `worker_series` per-worker series at most.
class MetricsServer {
 public:
  explicit MetricsServer(uint32_t worker_series)
      : indexer_(&backend_),
        service_(indexer_.operations(), 8, WallClock::Real()),
        metrics_(registry_, indexer_.operator_view(), service_, worker_series),
        admin_(Sources()),
        server_(service_, admin_, 0ms) {}

  bool started() const { return server_.started(); }

  void Apply(const Batch& batch) {
    v1::ApplyExternalKvBatchResponse resp;
    const grpc::Status s = server_.kv().ApplyExternalKvBatch(
        CallContext().get(), batch.request(), &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  grpc::Status Query(const v1::MatchExternalKvPrefixRequest& req,
                     v1::MatchExternalKvPrefixResponse* resp = nullptr) {
    v1::MatchExternalKvPrefixResponse own;
    return server_.kv().MatchExternalKvPrefix(CallContext().get(), req,
                                              resp != nullptr ? resp : &own);
  }
  v1::KVIndexer::Stub& kv() { return server_.kv(); }

  // The scrape now.
  std::string Scrape() const {
    return RenderPrometheusText(registry_.Collect());
  }
  // One series' value now; -1 when absent.
  double Value(std::string_view series) const {
    const std::optional<double> v = ScrapedValue(Scrape(), series);
    return v.has_value() ? *v : -1;
  }

 private:
  AdminSources Sources() {
    AdminSources sources;
    sources.indexer = &indexer_.operator_view();
    sources.max_worker_id_bytes = RequestLimits{}.max_worker_id_bytes;
    sources.metrics = metrics_.rpc();
    sources.queue_rejections = metrics_.admin_queue_rejections();
    sources.explain_rejections = metrics_.explain_rejections();
    return sources;
  }

  ModelBackend backend_;
  Indexer indexer_;
  KvIndexerService service_;
  MetricsRegistry registry_;
  ServerMetrics metrics_;
  AdminService admin_;
  test_support::InProcessServer server_;
};

constexpr std::string_view kQueryBlocks = "kvindexer_prefix_query_blocks_total";
constexpr std::string_view kMatchedBlocks =
    "kvindexer_prefix_matched_blocks_total";
constexpr std::string_view kFirstBlockMisses =
    "kvindexer_prefix_first_block_misses_total";
constexpr std::string_view kOmitted =
    "kvindexer_prefix_worker_matched_blocks_omitted_total";

std::string Bucket(std::string_view le) {
  return "kvindexer_prefix_best_match_fraction_bucket{le=\"" + std::string(le) +
         "\"}";
}
std::string WorkerSeries(std::string_view worker_id) {
  return "kvindexer_prefix_worker_matched_blocks_total{worker_id=\"" +
         std::string(worker_id) + "\"}";
}
// Lines of the scrape that are samples of the per-worker family.
int WorkerSeriesCount(const std::string& scrape) {
  constexpr std::string_view kPrefix =
      "\nkvindexer_prefix_worker_matched_blocks_total{";
  int n = 0;
  for (size_t at = scrape.find(kPrefix); at != std::string::npos;
       at = scrape.find(kPrefix, at + 1)) {
    ++n;
  }
  return n;
}

TEST(PrefixHitMetricsTest, FullPartialAndMissedAnswersAreCountedExactly) {
  MetricsServer server(/*worker_series=*/8);
  ASSERT_TRUE(server.started());
  server.Apply(Batch("w1", "10.0.0.1:9000").Report(kTierHbm, {1, 2, 3, 4}));
  server.Apply(Batch("w2", "10.0.0.2:9000").Report(kTierHbm, {1}));

  // Nothing is counted before the first answer.
  EXPECT_EQ(server.Value(kQueryBlocks), 0);
  EXPECT_EQ(server.Value("kvindexer_prefix_best_match_fraction_count"), 0);

  v1::MatchExternalKvPrefixResponse resp;
  // Full hit: w1 holds all 4 blocks (fraction 1).
  ASSERT_TRUE(server.Query(PrefixRequest({1, 2, 3, 4}), &resp).ok());
  ASSERT_EQ(resp.matches_size(), 2);
  EXPECT_EQ(resp.matches(0).matched_prefix_blocks(), 4u);
  // Partial hit: w1 holds 2 of 4, w2 1 of 4 (fraction 0.5).
  ASSERT_TRUE(server.Query(PrefixRequest({1, 2, 8, 9}), &resp).ok());
  ASSERT_EQ(resp.matches_size(), 2);
  EXPECT_EQ(resp.matches(0).matched_prefix_blocks(), 2u);
  // First-block miss: nobody holds block 5 (fraction 0).
  ASSERT_TRUE(server.Query(PrefixRequest({5, 6}), &resp).ok());
  EXPECT_EQ(resp.matches_size(), 0);
  // max_blocks cuts the window to 2 blocks, both held by w1 (fraction 1).
  ASSERT_TRUE(server.Query(PrefixRequest({1, 2, 3, 7, 7, 7}, 2), &resp).ok());
  // w1 holds 1 of 5 blocks (fraction 0.2).
  ASSERT_TRUE(server.Query(PrefixRequest({1, 9, 9, 9, 9}), &resp).ok());

  EXPECT_EQ(server.Value(kQueryBlocks), 4 + 4 + 2 + 2 + 5);
  EXPECT_EQ(server.Value(kMatchedBlocks), 4 + 2 + 0 + 2 + 1);
  EXPECT_EQ(server.Value(kFirstBlockMisses), 1);
  EXPECT_EQ(server.Value(Bucket("0")), 1);
  EXPECT_EQ(server.Value(Bucket("0.1")), 1);
  EXPECT_EQ(server.Value(Bucket("0.25")), 2);
  EXPECT_EQ(server.Value(Bucket("0.5")), 3);
  EXPECT_EQ(server.Value(Bucket("0.75")), 3);
  EXPECT_EQ(server.Value(Bucket("0.9")), 3);
  EXPECT_EQ(server.Value(Bucket("1")), 5);
  EXPECT_EQ(server.Value(Bucket("+Inf")), 5);
  EXPECT_EQ(server.Value("kvindexer_prefix_best_match_fraction_count"), 5);
  EXPECT_DOUBLE_EQ(server.Value("kvindexer_prefix_best_match_fraction_sum"),
                   1 + 0.5 + 0 + 1 + 0.2);
  // Only the best match's worker is credited: w2 never had it.
  EXPECT_EQ(server.Value(WorkerSeries("w1")), 9);
  EXPECT_EQ(server.Value(WorkerSeries("w2")), -1);
  EXPECT_EQ(server.Value(kOmitted), 0);
}

TEST(PrefixHitMetricsTest, RefusedQueriesCountNothing) {
  MetricsServer server(/*worker_series=*/8);
  ASSERT_TRUE(server.started());
  server.Apply(Batch("w1", "10.0.0.1:9000").Report(kTierHbm, {1, 2}));

  EXPECT_EQ(server.Query(PrefixRequest({})).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  v1::MatchExternalKvPrefixRequest coverage_without_hashes = PrefixRequest({});
  coverage_without_hashes.add_eligible_worker_addresses("10.0.0.1:9000");
  EXPECT_EQ(server.Query(coverage_without_hashes).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  EXPECT_EQ(
      server.Value("kvindexer_grpc_requests_total{method="
                   "\"MatchExternalKvPrefix\",code=\"INVALID_ARGUMENT\"}"),
      2);
  EXPECT_EQ(server.Value(kQueryBlocks), 0);
  EXPECT_EQ(server.Value(kMatchedBlocks), 0);
  EXPECT_EQ(server.Value(kFirstBlockMisses), 0);
  EXPECT_EQ(server.Value("kvindexer_prefix_best_match_fraction_count"), 0);
  EXPECT_EQ(server.Value(Bucket("+Inf")), 0);
  EXPECT_EQ(WorkerSeriesCount(server.Scrape()), 0);
  EXPECT_EQ(server.Value(kOmitted), 0);
}

TEST(PrefixHitMetricsTest, PerWorkerSeriesStayWithinTheCap) {
  MetricsServer server(/*worker_series=*/2);
  ASSERT_TRUE(server.started());
  for (int i = 1; i <= 4; ++i) {
    const std::string id = "w" + std::to_string(i);
    server.Apply(Batch(id, "10.0.0." + std::to_string(i) + ":9000")
                     .Report(kTierHbm, {10 * i, 10 * i + 1}));
  }
  // w1 (2 blocks) and w2 (1 block) are the first two with a best match;
  // w3 and w4 come after the cap.
  ASSERT_TRUE(server.Query(PrefixRequest({10, 11})).ok());
  ASSERT_TRUE(server.Query(PrefixRequest({20, 99})).ok());
  ASSERT_TRUE(server.Query(PrefixRequest({30, 31})).ok());
  ASSERT_TRUE(server.Query(PrefixRequest({40, 41, 42})).ok());
  ASSERT_TRUE(server.Query(PrefixRequest({10, 11, 12})).ok());

  const std::string scrape = server.Scrape();
  EXPECT_EQ(WorkerSeriesCount(scrape), 2) << scrape;
  EXPECT_EQ(server.Value(WorkerSeries("w1")), 4);
  EXPECT_EQ(server.Value(WorkerSeries("w2")), 1);
  EXPECT_EQ(server.Value(WorkerSeries("w3")), -1);
  EXPECT_EQ(server.Value(WorkerSeries("w4")), -1);
  EXPECT_EQ(server.Value(kOmitted), 4);
  // The per-worker series and the omitted ones add up to the total.
  EXPECT_EQ(server.Value(kMatchedBlocks), 4 + 1 + 4);
}

TEST(PrefixHitMetricsTest, NoPerWorkerSeriesWhenTheCapIsZero) {
  MetricsServer server(/*worker_series=*/0);
  ASSERT_TRUE(server.started());
  server.Apply(Batch("w1", "10.0.0.1:9000").Report(kTierHbm, {1, 2}));
  ASSERT_TRUE(server.Query(PrefixRequest({1, 2})).ok());
  EXPECT_EQ(WorkerSeriesCount(server.Scrape()), 0);
  EXPECT_EQ(server.Value(kOmitted), 2);
  EXPECT_EQ(server.Value(kMatchedBlocks), 2);
}

TEST(PrefixHitMetricsTest, CoverageQueriesAreCountedWithTheStreamsLabels) {
  MetricsServer server(/*worker_series=*/8);
  ASSERT_TRUE(server.started());
  const v1::StreamId a = test_support::StreamIdOf("ns", "w", 0);
  const v1::StreamId b = test_support::StreamIdOf("ns", "w", 1);
  v1::ConfigureExpectedWorkersRequest configure;
  for (const auto& [stream, address, generation] :
       {std::tuple{a, "http://a", "g1"}, std::tuple{b, "http://b", "g2"}}) {
    v1::ExpectedWorker* w = configure.add_workers();
    *w->mutable_stream_id() = stream;
    w->set_worker_address(address);
    w->set_worker_generation(generation);
  }
  v1::ConfigureExpectedWorkersResponse configured;
  ASSERT_TRUE(
      server.kv()
          .ConfigureExpectedWorkers(CallContext().get(), configure, &configured)
          .ok());
  const auto replace = [&](const v1::StreamId& stream, const char* address,
                           const char* generation, const Hashes& hbm) {
    v1::ReplaceExternalKvSnapshotRequest req;
    *req.mutable_stream_id() = stream;
    req.set_worker_address(address);
    req.set_worker_epoch("e1");
    req.set_applied_seq(10);
    req.set_worker_generation(generation);
    v1::TierHashes* tier = req.add_hashes_by_tier();
    tier->set_tier(v1::TIER_HBM);
    for (int64_t h : hbm) tier->add_hashes(h);
    v1::ReplaceExternalKvSnapshotResponse resp;
    const grpc::Status s =
        server.kv().ReplaceExternalKvSnapshot(CallContext().get(), req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  };
  replace(a, "http://a", "g1", {1, 2, 3});
  replace(b, "http://b", "g2", {1});

  v1::MatchExternalKvPrefixRequest covered = PrefixRequest({1, 2, 3, 4});
  *covered.add_eligible_streams() = a;
  *covered.add_eligible_streams() = b;
  v1::MatchExternalKvPrefixResponse resp;
  ASSERT_TRUE(server.Query(covered, &resp).ok());
  ASSERT_EQ(resp.matches_size(), 2);
  // Only b is eligible: its 1 block is the best match.
  v1::MatchExternalKvPrefixRequest only_b = PrefixRequest({1, 2});
  *only_b.add_eligible_streams() = b;
  ASSERT_TRUE(server.Query(only_b, &resp).ok());
  // Nobody eligible holds block 9.
  v1::MatchExternalKvPrefixRequest miss = covered;
  miss.set_hashes(0, 9);
  ASSERT_TRUE(server.Query(miss).ok());

  EXPECT_EQ(server.Value(kQueryBlocks), 4 + 2 + 4);
  EXPECT_EQ(server.Value(kMatchedBlocks), 3 + 1 + 0);
  EXPECT_EQ(server.Value(kFirstBlockMisses), 1);
  EXPECT_EQ(server.Value(Bucket("0")), 1);
  EXPECT_EQ(server.Value(Bucket("0.5")), 2);
  EXPECT_EQ(server.Value(Bucket("0.75")), 3);
  EXPECT_EQ(server.Value(
                "kvindexer_prefix_worker_matched_blocks_total{worker_id=\"w\","
                "namespace=\"ns\",dp_rank=\"0\"}"),
            3);
  EXPECT_EQ(server.Value(
                "kvindexer_prefix_worker_matched_blocks_total{worker_id=\"w\","
                "namespace=\"ns\",dp_rank=\"1\"}"),
            1);
}

}  // namespace
}  // namespace kvindexer::prefix_hit_metrics_test
