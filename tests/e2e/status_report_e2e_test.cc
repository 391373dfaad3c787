// Status reports to routers (docs/fleet.md, "Status reports to routers") on
// the real kv-indexer-server: a fake router (tests/support/
// fake_status_router.h) receives the reports, each of which must pass the
// router's checks; readiness follows the configured workers; SIGTERM sends
// a final not-ready report; bad settings exit 2.
#include <signal.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "server/status_report_parser.h"
#include "server/status_report_validation.h"
#include "tests/e2e/ready_server.h"
#include "tests/support/fake_status_router.h"
#include "tests/support/http_get.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/requests.h"
#include "tests/support/server_process.h"

namespace kvindexer::e2e {
namespace status_report_e2e {

namespace v1 = ::kv_indexer::v1;
using std::chrono::milliseconds;
using test_support::FakeStatusRouter;
using test_support::ProcessOptions;
using ::testing::HasSubstr;
using Requests = std::vector<FakeStatusRouter::Request>;

constexpr milliseconds kBound{20000};

ProcessOptions ServerOptions(std::map<std::string, std::string> env) {
  ProcessOptions options;
  options.binary = KVINDEXER_SERVER_BINARY;
  options.unset_env = {"KV_INDEXER_BACKEND",
                       "KV_INDEXER_BACKEND_PATH",
                       "KV_INDEXER_DATA_DIR",
                       "KV_INDEXER_LOG_LEVEL",
                       "KV_INDEXER_ROUTER_URLS",
                       "KV_INDEXER_ID",
                       "KV_INDEXER_ADVERTISE_ENDPOINT",
                       "KV_INDEXER_STATUS_INTERVAL_MS",
                       "KV_INDEXER_ROUTER_TLS_CA_FILE",
                       "KV_INDEXER_METRICS_ADDR"};
  options.env = std::move(env);
  return options;
}

// The reports received so far, parsed; every one must pass the router's
// checks.
std::vector<StatusReport> Reports(const FakeStatusRouter& router) {
  std::vector<StatusReport> out;
  for (const FakeStatusRouter::Request& r : router.requests()) {
    EXPECT_EQ(r.path, "/v1/kv-indexer/status");
    EXPECT_EQ(r.content_type, "application/json");
    EXPECT_TRUE(ValidateStatusReportBody(r.body).ok())
        << ValidateStatusReportBody(r.body) << "\n"
        << r.body;
    absl::StatusOr<StatusReport> report = ParseStatusReport(r.body);
    if (report.ok()) out.push_back(*std::move(report));
  }
  return out;
}

// Waits for a report after the first `after` that satisfies `want`.
bool WaitForReport(FakeStatusRouter& router, size_t after,
                   const std::function<bool(const StatusReport&)>& want) {
  return router.WaitFor(
      [&](const Requests& requests) {
        for (size_t i = after; i < requests.size(); ++i) {
          absl::StatusOr<StatusReport> r = ParseStatusReport(requests[i].body);
          if (r.ok() && want(*r)) return true;
        }
        return false;
      },
      kBound);
}

TEST(StatusReportE2e,
     ReadinessFollowsTheConfiguredWorkersAndSigtermSaysGoodbye) {
  absl::StatusOr<std::unique_ptr<FakeStatusRouter>> router =
      FakeStatusRouter::Start();
  ASSERT_TRUE(router.ok()) << router.status();
  absl::StatusOr<ReadyServer> server = StartReadyServer(
      ServerOptions({{"KV_INDEXER_ROUTER_URLS", (*router)->url() + "/"},
                     {"KV_INDEXER_ID", "e2e-indexer"},
                     {"KV_INDEXER_ADVERTISE_ENDPOINT", "http://127.0.0.1:1"},
                     {"KV_INDEXER_STATUS_INTERVAL_MS", "100"},
                     {"KV_INDEXER_METRICS_ADDR", "127.0.0.1:0"}}),
      /*port=*/0, kBound);
  ASSERT_TRUE(server.ok()) << server.status();

  // No workers: not ready.
  ASSERT_TRUE((*router)->WaitForRequests(3, kBound));
  std::vector<StatusReport> reports = Reports(**router);
  ASSERT_FALSE(reports.empty());
  EXPECT_EQ(reports.front().indexer_id, "e2e-indexer");
  EXPECT_EQ(reports.front().endpoint, "http://127.0.0.1:1");
  EXPECT_FALSE(reports.front().ready);
  EXPECT_EQ(reports.front().total_workers, 0u);

  // Configured: listed, not ready.
  grpc::ClientContext configure_context;
  v1::ConfigureExpectedWorkersResponse configured;
  ASSERT_TRUE(
      server->stub
          ->ConfigureExpectedWorkers(
              &configure_context,
              test_support::ExpectedWorkers().Worker("w1", "http://w1:8000"),
              &configured)
          .ok());
  size_t seen = (*router)->request_count();
  ASSERT_TRUE(WaitForReport(**router, seen, [](const StatusReport& r) {
    return r.total_workers == 1;
  }));
  reports = Reports(**router);
  EXPECT_FALSE(reports.back().ready);
  EXPECT_EQ(reports.back().ready_workers, 0u);

  // Committed (a sequenced snapshot): ready, counts equal.
  grpc::ClientContext replace_context;
  v1::ReplaceExternalKvSnapshotResponse replaced;
  ASSERT_TRUE(server->stub
                  ->ReplaceExternalKvSnapshot(
                      &replace_context,
                      test_support::Snapshot("w1", "http://w1:8000")
                          .Epoch("epoch-1")
                          .AppliedSeq(42),
                      &replaced)
                  .ok());
  seen = (*router)->request_count();
  ASSERT_TRUE(WaitForReport(**router, seen,
                            [](const StatusReport& r) { return r.ready; }));
  reports = Reports(**router);
  const StatusReport& ready = reports.back();
  EXPECT_TRUE(ready.ready);
  EXPECT_EQ(ready.total_workers, 1u);
  EXPECT_EQ(ready.ready_workers, 1u);
  ASSERT_EQ(ready.streams.size(), 1u);
  EXPECT_EQ(ready.streams[0].ns, "");
  EXPECT_EQ(ready.streams[0].worker_id, "w1");
  EXPECT_EQ(ready.streams[0].dp_rank, 0u);
  EXPECT_EQ(ready.streams[0].worker_address, "http://w1:8000");
  EXPECT_TRUE(ready.streams[0].ready);
  EXPECT_EQ(ready.streams[0].worker_epoch, "epoch-1");
  EXPECT_EQ(ready.streams[0].watermark, 42u);
  EXPECT_EQ(ready.streams[0].worker_generation, "");

  // At least once per interval (with room for a loaded machine).
  const Requests requests = (*router)->requests();
  const auto span = requests.back().received - requests.front().received;
  EXPECT_LE(span, milliseconds(100) * static_cast<int>(requests.size() - 1) +
                      milliseconds(1000));

  // The counter on /metrics.
  const int metrics_port =
      test_support::WaitForMetricsPort(*server->process, kBound);
  ASSERT_GT(metrics_port, 0);
  absl::StatusOr<test_support::HttpResponse> scrape =
      test_support::HttpGet(metrics_port, "/metrics");
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  const std::optional<double> accepted = test_support::ScrapedValue(
      scrape->body, "kvindexer_status_reports_total{router=\"" +
                        (*router)->url() + "\",result=\"accepted\"}");
  ASSERT_TRUE(accepted.has_value()) << scrape->body;
  EXPECT_GE(*accepted, 3);

  // SIGTERM: one last report, not ready, every stream listed not ready.
  ASSERT_TRUE(server->process->Signal(SIGTERM));
  const std::optional<test_support::ExitStatus> exit =
      server->process->WaitForExit(kBound);
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(test_support::EndedCleanly(*exit, server->process->Output()))
      << exit->ToString() << "\n"
      << server->process->Output();
  reports = Reports(**router);
  const StatusReport& last = reports.back();
  EXPECT_FALSE(last.ready);
  EXPECT_EQ(last.total_workers, 1u);
  EXPECT_EQ(last.ready_workers, 0u);
  ASSERT_EQ(last.streams.size(), 1u);
  EXPECT_FALSE(last.streams[0].ready);
}

void ExpectExit2(std::map<std::string, std::string> env,
                 std::string_view message) {
  absl::StatusOr<std::unique_ptr<test_support::ServerProcess>> process =
      test_support::ServerProcess::Start(ServerOptions(std::move(env)));
  ASSERT_TRUE(process.ok()) << process.status();
  const std::optional<test_support::ExitStatus> exit =
      (*process)->WaitForExit(kBound);
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->exited);
  EXPECT_EQ(exit->code, 2) << (*process)->Output();
  EXPECT_THAT((*process)->Output(), HasSubstr(message));
}

TEST(StatusReportE2e, BadSettingsExit2) {
  ExpectExit2({{"KV_INDEXER_LISTEN_ADDR", "127.0.0.1:0"},
               {"KV_INDEXER_ROUTER_URLS", "http://127.0.0.1:9"}},
              "KV_INDEXER_ADVERTISE_ENDPOINT is unset");
  ExpectExit2({{"KV_INDEXER_LISTEN_ADDR", "127.0.0.1:0"},
               {"KV_INDEXER_ROUTER_URLS", "http://127.0.0.1:9"},
               {"KV_INDEXER_ADVERTISE_ENDPOINT", "http://127.0.0.1:1"},
               {"KV_INDEXER_STATUS_INTERVAL_MS", "0"}},
              "KV_INDEXER_STATUS_INTERVAL_MS=\"0\" is invalid");
  ExpectExit2({{"KV_INDEXER_LISTEN_ADDR", "127.0.0.1:0"},
               {"KV_INDEXER_ROUTER_URLS", "http://127.0.0.1:9"},
               {"KV_INDEXER_ADVERTISE_ENDPOINT", "10.0.0.1:50051"}},
              "KV_INDEXER_ADVERTISE_ENDPOINT=\"10.0.0.1:50051\" is invalid");
  ExpectExit2({{"KV_INDEXER_LISTEN_ADDR", "127.0.0.1:0"},
               {"KV_INDEXER_ROUTER_URLS", "ftp://router"},
               {"KV_INDEXER_ADVERTISE_ENDPOINT", "http://127.0.0.1:1"}},
              "KV_INDEXER_ROUTER_URLS=\"ftp://router\" is invalid");
}

}  // namespace status_report_e2e
}  // namespace kvindexer::e2e
