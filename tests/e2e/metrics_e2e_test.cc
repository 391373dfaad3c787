// The metrics endpoint of the real kv-indexer-server (docs/metrics.md): it is
// started with KV_INDEXER_METRICS_ADDR=127.0.0.1:0, its metrics port is read
// from its "metrics http addr=" line, known traffic is sent and /metrics is
// scraped over HTTP and checked value by value.
#include <signal.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "kvindexer_admin.grpc.pb.h"
#include "tests/support/http_get.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/requests.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/server_process.h"

#ifndef KVINDEXER_SERVER_BINARY
#error "KVINDEXER_SERVER_BINARY must name the kv-indexer-server executable"
#endif

namespace kvindexer::e2e {
// Named rather than anonymous: CI compiles test files in batches (unity
// builds), where anonymous namespaces of neighbouring files merge.
namespace metrics_e2e_test {

using namespace std::chrono_literals;
using ::kv_indexer::v1::ApplyExternalKvBatchResponse;
using ::kv_indexer::v1::KVIndexer;
using ::kv_indexer::v1::MatchExternalKvPrefixResponse;
using ::kvindexer::test_support::Batch;
using ::kvindexer::test_support::HttpGet;
using ::kvindexer::test_support::HttpResponse;
using ::kvindexer::test_support::ListeningServer;
using ::kvindexer::test_support::PrefixRequest;
using ::kvindexer::test_support::ProcessOptions;
using ::kvindexer::test_support::ServerProcess;
using ::kvindexer::test_support::StartListeningServer;
using ::kvindexer::test_support::WaitForMetricsPort;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr auto kBound = 20s;

std::optional<double> Sample(const std::string& scrape,
                             std::string_view series) {
  return ::kvindexer::test_support::ScrapedValue(scrape, series);
}

std::unique_ptr<grpc::ClientContext> Context() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + 10s);
  return context;
}

TEST(ServerMetricsE2eTest, ScrapeCountsKnownTraffic) {
  ProcessOptions options;
  options.binary = KVINDEXER_SERVER_BINARY;
  options.unset_env = {"KV_INDEXER_BACKEND", "KV_INDEXER_BACKEND_PATH",
                       "KV_INDEXER_DATA_DIR", "KV_INDEXER_LOG_LEVEL"};
  options.env = {{"KV_INDEXER_METRICS_ADDR", "127.0.0.1:0"}};
  absl::StatusOr<ListeningServer> server =
      StartListeningServer(std::move(options), /*port=*/0, kBound);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = WaitForMetricsPort(*server->process, kBound);
  ASSERT_GT(port, 0) << server->process->Output();

  // Probes: the gRPC port is bound, so the server is ready.
  absl::StatusOr<HttpResponse> health = HttpGet(port, "/healthz");
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->status, 200);
  absl::StatusOr<HttpResponse> ready = HttpGet(port, "/readyz");
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_EQ(ready->status, 200) << ready->body;
  absl::StatusOr<HttpResponse> missing = HttpGet(port, "/other");
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_EQ(missing->status, 404);

  // Known traffic: 3 applies of 2 blocks each, 4 prefix queries, 1 invalid
  // apply (an empty worker id).
  auto stub = KVIndexer::NewStub(
      grpc::CreateChannel(server->address, grpc::InsecureChannelCredentials()));
  constexpr int kApplies = 3;
  constexpr int kQueries = 4;
  for (int i = 0; i < kApplies; ++i) {
    ApplyExternalKvBatchResponse resp;
    const grpc::Status s = stub->ApplyExternalKvBatch(
        Context().get(),
        Batch("w1", "10.0.0.1:9000").Report(kTierHbm, {10 * i + 1, 10 * i + 2}),
        &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  for (int i = 0; i < kQueries; ++i) {
    MatchExternalKvPrefixResponse resp;
    const grpc::Status s = stub->MatchExternalKvPrefix(
        Context().get(), PrefixRequest({1, 2}), &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  {
    ApplyExternalKvBatchResponse resp;
    const grpc::Status s = stub->ApplyExternalKvBatch(
        Context().get(), Batch("", "10.0.0.1:9000").Report(kTierHbm, {1}),
        &resp);
    ASSERT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }

  // The admin service is counted too: one GetStats, one RemoveWorker of an
  // unknown worker.
  {
    auto admin =
        ::kvindexer::admin::v1::KvIndexerAdmin::NewStub(grpc::CreateChannel(
            server->address, grpc::InsecureChannelCredentials()));
    ::kvindexer::admin::v1::GetStatsResponse stats;
    ASSERT_TRUE(admin
                    ->GetStats(Context().get(),
                               ::kvindexer::admin::v1::GetStatsRequest(),
                               &stats)
                    .ok());
    ::kvindexer::admin::v1::RemoveWorkerRequest remove;
    remove.set_worker_id("nobody");
    ::kvindexer::admin::v1::RemoveWorkerResponse removed;
    ASSERT_EQ(
        admin->RemoveWorker(Context().get(), remove, &removed).error_code(),
        grpc::StatusCode::NOT_FOUND);
  }

  absl::StatusOr<HttpResponse> scrape = HttpGet(port, "/metrics");
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  ASSERT_EQ(scrape->status, 200);
  EXPECT_THAT(scrape->headers,
              HasSubstr("Content-Type: text/plain; version=0.0.4"));
  EXPECT_EQ(Sample(scrape->body,
                   "kvindexer_grpc_requests_total{method=\"GetStats\","
                   "code=\"OK\"}"),
            1);
  EXPECT_EQ(Sample(scrape->body,
                   "kvindexer_grpc_requests_total{method=\"RemoveWorker\","
                   "code=\"NOT_FOUND\"}"),
            1);
  EXPECT_EQ(Sample(scrape->body, "kvindexer_backend_failed"), 0);
  const std::string& m = scrape->body;
  EXPECT_THAT(m, HasSubstr("# TYPE kvindexer_grpc_requests_total counter\n"));
  EXPECT_THAT(m, HasSubstr("# TYPE kvindexer_grpc_request_duration_seconds "
                           "histogram\n"));
  EXPECT_EQ(Sample(m,
                   "kvindexer_grpc_requests_total{method="
                   "\"ApplyExternalKvBatch\",code=\"OK\"}"),
            kApplies);
  EXPECT_EQ(Sample(m,
                   "kvindexer_grpc_requests_total{method="
                   "\"ApplyExternalKvBatch\",code=\"INVALID_ARGUMENT\"}"),
            1);
  EXPECT_EQ(Sample(m,
                   "kvindexer_grpc_requests_total{method="
                   "\"MatchExternalKvPrefix\",code=\"OK\"}"),
            kQueries);
  EXPECT_EQ(Sample(m,
                   "kvindexer_grpc_requests_total{method="
                   "\"MatchExternalKv\",code=\"OK\"}"),
            0);
  EXPECT_EQ(Sample(m,
                   "kvindexer_grpc_request_duration_seconds_count{method="
                   "\"MatchExternalKvPrefix\"}"),
            kQueries);
  EXPECT_EQ(Sample(m,
                   "kvindexer_grpc_request_duration_seconds_bucket{method="
                   "\"MatchExternalKvPrefix\",le=\"+Inf\"}"),
            kQueries);
  EXPECT_EQ(Sample(m,
                   "kvindexer_grpc_request_duration_seconds_count{method="
                   "\"ApplyExternalKvBatch\"}"),
            kApplies + 1);
  EXPECT_EQ(Sample(m, "kvindexer_apply_queue_wait_seconds_count"),
            kApplies + 1);
  EXPECT_EQ(Sample(m, "kvindexer_apply_queue_depth"), 0);
  EXPECT_EQ(Sample(m, "kvindexer_prefix_admission_rejections_total"), 0);
  EXPECT_EQ(Sample(m, "kvindexer_prefix_deadline_sheds_total"), 0);
  // Every query asked for blocks 1 and 2, which w1 holds.
  EXPECT_EQ(Sample(m, "kvindexer_prefix_query_blocks_total"), 2 * kQueries);
  EXPECT_EQ(Sample(m, "kvindexer_prefix_matched_blocks_total"), 2 * kQueries);
  EXPECT_EQ(Sample(m, "kvindexer_prefix_first_block_misses_total"), 0);
  EXPECT_EQ(
      Sample(m, "kvindexer_prefix_best_match_fraction_bucket{le=\"0.9\"}"), 0);
  EXPECT_EQ(Sample(m, "kvindexer_prefix_best_match_fraction_bucket{le=\"1\"}"),
            kQueries);
  EXPECT_EQ(
      Sample(m,
             "kvindexer_prefix_worker_matched_blocks_total{worker_id=\"w1\"}"),
      2 * kQueries);
  EXPECT_EQ(Sample(m, "kvindexer_backend_placements"), 2 * kApplies);
  EXPECT_EQ(Sample(m, "kvindexer_backend_blocks"), 2 * kApplies);
  EXPECT_EQ(Sample(m, "kvindexer_workers"), 1);
  EXPECT_EQ(Sample(m, "kvindexer_worker_ready{worker_id=\"w1\"}"), 1);
  EXPECT_EQ(Sample(m, "kvindexer_worker_sequenced{worker_id=\"w1\"}"), 0);
  // The age of the last apply is written once OperatorView::ListWorkers fills
  // WorkerSnapshot::last_apply (the admin API's work); when it is there it
  // must be small.
  if (const std::optional<double> age = Sample(
          m, "kvindexer_worker_last_apply_age_seconds{worker_id=\"w1\"}")) {
    EXPECT_GE(*age, 0);
    EXPECT_LT(*age, 60);
  }
  EXPECT_TRUE(Sample(m, "kvindexer_backend_memory_bytes").has_value());
  // No data directory: no log or checkpoint figures.
  EXPECT_THAT(m, ::testing::Not(HasSubstr("kvindexer_wal_end_bytes")));

  stub.reset();
  EXPECT_TRUE(server->process->Stop(kBound).ok()) << server->process->Output();
}

// With a data directory the log and checkpoint figures appear once recovery
// has finished, and acknowledged applies move the log's end and sync count.
TEST(ServerMetricsE2eTest, DataDirectoryFigures) {
  auto dir = ::kvindexer::test_support::ScratchDir::Create("metrics-e2e-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  ProcessOptions options;
  options.binary = KVINDEXER_SERVER_BINARY;
  options.unset_env = {"KV_INDEXER_BACKEND", "KV_INDEXER_BACKEND_PATH",
                       "KV_INDEXER_WAL_SYNC", "KV_INDEXER_LOG_LEVEL"};
  options.env = {{"KV_INDEXER_METRICS_ADDR", "127.0.0.1:0"},
                 {"KV_INDEXER_DATA_DIR", (*dir)->path() + "/data"}};
  absl::StatusOr<ListeningServer> server =
      StartListeningServer(std::move(options), /*port=*/0, kBound);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = WaitForMetricsPort(*server->process, kBound);
  ASSERT_GT(port, 0) << server->process->Output();

  auto stub = KVIndexer::NewStub(
      grpc::CreateChannel(server->address, grpc::InsecureChannelCredentials()));
  for (int i = 0; i < 2; ++i) {
    ApplyExternalKvBatchResponse resp;
    const grpc::Status s = stub->ApplyExternalKvBatch(
        Context().get(), Batch("w1", "10.0.0.1:9000").Report(kTierHbm, {i}),
        &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  absl::StatusOr<HttpResponse> scrape = HttpGet(port, "/metrics");
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  const std::string& m = scrape->body;
  EXPECT_GT(Sample(m, "kvindexer_wal_end_bytes").value_or(0), 0) << m;
  // KV_INDEXER_WAL_SYNC=always: each acknowledged apply waited for a sync.
  EXPECT_GE(Sample(m, "kvindexer_wal_syncs_total").value_or(0), 1) << m;
  EXPECT_TRUE(Sample(m, "kvindexer_checkpoint_generation").has_value()) << m;
  EXPECT_EQ(Sample(m, "kvindexer_checkpoints_written_total"), 0);
  EXPECT_EQ(Sample(m, "kvindexer_checkpoint_restarts_total"), 0);
  stub.reset();
  EXPECT_TRUE(server->process->Stop(kBound).ok()) << server->process->Output();
}

// The server started with `var`=`value` exits 2 at start, naming `var`.
void ExpectRefusedAtStart(const std::string& var, const std::string& value) {
  ProcessOptions options;
  options.binary = KVINDEXER_SERVER_BINARY;
  options.env = {{var, value}, {"KV_INDEXER_LISTEN_ADDR", "127.0.0.1:0"}};
  auto process = ServerProcess::Start(std::move(options));
  ASSERT_TRUE(process.ok()) << process.status();
  const auto exit = (*process)->WaitForExit(kBound);
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->exited);
  EXPECT_EQ(exit->code, 2);
  EXPECT_THAT((*process)->Output(), HasSubstr(var));
}

TEST(ServerMetricsE2eTest, BadAddressExitsTwoNamingTheVariable) {
  ExpectRefusedAtStart("KV_INDEXER_METRICS_ADDR", "nowhere");
}

// KV_INDEXER_METRICS_WORKER_SERIES bounds the per-worker series; the
// counts by state cover every worker.
TEST(ServerMetricsE2eTest, PerWorkerSeriesAreCappedAndCountsCoverAll) {
  ProcessOptions options;
  options.binary = KVINDEXER_SERVER_BINARY;
  options.unset_env = {"KV_INDEXER_BACKEND", "KV_INDEXER_BACKEND_PATH",
                       "KV_INDEXER_DATA_DIR", "KV_INDEXER_LOG_LEVEL"};
  options.env = {{"KV_INDEXER_METRICS_ADDR", "127.0.0.1:0"},
                 {"KV_INDEXER_METRICS_WORKER_SERIES", "2"}};
  absl::StatusOr<ListeningServer> server =
      StartListeningServer(std::move(options), /*port=*/0, kBound);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = WaitForMetricsPort(*server->process, kBound);
  ASSERT_GT(port, 0) << server->process->Output();

  auto stub = KVIndexer::NewStub(
      grpc::CreateChannel(server->address, grpc::InsecureChannelCredentials()));
  for (const char* id : {"w3", "w1", "w2"}) {
    ApplyExternalKvBatchResponse resp;
    const grpc::Status s = stub->ApplyExternalKvBatch(
        Context().get(), Batch(id, "10.0.0.1:9000").Report(kTierHbm, {1}),
        &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  absl::StatusOr<HttpResponse> scrape = HttpGet(port, "/metrics");
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  const std::string& body = scrape->body;
  EXPECT_EQ(Sample(body, "kvindexer_workers"), 3.0);
  EXPECT_EQ(Sample(body, "kvindexer_workers_ready"), 3.0);
  EXPECT_EQ(Sample(body, "kvindexer_workers_by_fidelity{fidelity=\"unknown\"}"),
            3.0);
  EXPECT_EQ(Sample(body, "kvindexer_worker_series_omitted"), 1.0);
  // The first two by id have series; the third has none.
  EXPECT_EQ(Sample(body, "kvindexer_worker_ready{worker_id=\"w1\"}"), 1.0);
  EXPECT_EQ(Sample(body, "kvindexer_worker_ready{worker_id=\"w2\"}"), 1.0);
  EXPECT_THAT(body, Not(HasSubstr("worker_id=\"w3\"")));
  stub.reset();
  EXPECT_TRUE(server->process->Stop(kBound).ok()) << server->process->Output();
}

TEST(ServerMetricsE2eTest, ABadWorkerSeriesBoundStopsTheServer) {
  ExpectRefusedAtStart("KV_INDEXER_METRICS_WORKER_SERIES", "lots");
}

}  // namespace metrics_e2e_test
}  // namespace kvindexer::e2e
