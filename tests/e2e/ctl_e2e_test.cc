// kv-indexer-ctl against the real kv-indexer-server on a loopback port, with
// a write token configured: every command, and the exit codes the server's
// own answers produce; and with an admin read token as well.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ctl/exit_codes.h"
#include "ctl/tests/ctl_runner.h"
#include "kv_indexer.grpc.pb.h"
#include "tests/support/grpc_probes.h"
#include "tests/support/http_get.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/requests.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/server_process.h"

namespace kvindexer::ctl {
namespace {

using namespace std::chrono_literals;
using ::kvindexer::test_support::Batch;
using testing::CtlResult;
using ::testing::HasSubstr;
using testing::RunCtlForTest;
using ::testing::StartsWith;

TEST(CtlServerE2eTest, EveryCommandAgainstTheRealServer) {
  absl::StatusOr<std::unique_ptr<test_support::ScratchDir>> dir =
      test_support::ScratchDir::Create("ctl-e2e-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string token_file = (*dir)->Sub("token");
  const std::string wrong_file = (*dir)->Sub("wrong");
  std::ofstream(token_file) << "e2e-token-0123456789\n";
  std::ofstream(wrong_file) << "not-it-0123456789abcd\n";

  test_support::ProcessOptions options;
  options.binary = KVINDEXER_SERVER_BINARY;
  options.unset_env = {"KV_INDEXER_BACKEND", "KV_INDEXER_BACKEND_PATH",
                       "KV_INDEXER_DATA_DIR", "KV_INDEXER_TLS_CERT_FILE",
                       "KV_INDEXER_TLS_KEY_FILE"};
  options.env = {{"KV_INDEXER_WRITE_TOKEN_FILE", token_file}};
  absl::StatusOr<test_support::ListeningServer> server =
      test_support::StartListeningServer(std::move(options), 0, 20s);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string endpoint = absl::StrCat("http://", server->address);

  // One worker with blocks 1..3.
  auto stub = kv_indexer::v1::KVIndexer::NewStub(
      grpc::CreateChannel(server->address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 10s);
  context.AddMetadata("authorization", "Bearer e2e-token-0123456789");
  kv_indexer::v1::ApplyExternalKvBatchResponse applied;
  ASSERT_TRUE(stub->ApplyExternalKvBatch(
                      &context,
                      Batch("w-1", "10.0.0.1:9000").Report(1, {1, 2, 3}),
                      &applied)
                  .ok());

  auto run = [&](std::vector<std::string> args) {
    return RunCtlForTest(args, {{"KV_INDEXER_ENDPOINT", endpoint}});
  };
  CtlResult r = run({"status"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("server     kv-indexer-server "));
  EXPECT_THAT(r.out, HasSubstr("3 blocks"));

  r = run({"workers"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\nw-1     10.0.0.1:9000"));

  r = run({"workers", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, StartsWith("{\"workers\":[{\"worker_id\":\"w-1\""));

  r = run({"explain", "1,2,3,4"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("answer: best 3 blocks"));
  EXPECT_THAT(r.out, HasSubstr("block_missing @3"));

  r = run({"top", "--iterations", "2", "--interval", "0.1"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\nw-1 "));

  // The server's refusals and its NOT_FOUND.
  r = run({"remove-worker", "w-1"});
  EXPECT_EQ(r.code, kExitRefused) << r.err;
  r = run({"remove-worker", "w-1", "--token-file", wrong_file});
  EXPECT_EQ(r.code, kExitRefused) << r.err;
  r = run(
      {"remove-worker", "w-1", "--token-file", token_file, "--reason", "e2e"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, StartsWith("removed worker w-1"));
  r = run({"remove-worker", "w-1", "--token-file", token_file});
  EXPECT_EQ(r.code, kExitNotFound) << r.err;
  r = run({"workers"});
  EXPECT_EQ(r.out, "no workers\n");

  stub.reset();
  EXPECT_TRUE(server->process->Stop(20s).ok()) << server->process->Output();
}

// At the worker bound (65,536, the default KV_INDEXER_MAX_WORKERS) the
// listing still reaches the operator: `workers` follows the pages, `status`
// counts them all, and a scrape holds the counts and only the capped
// per-worker series.
TEST(CtlServerE2eTest, ListingsAtTheWorkerBound) {
  constexpr int kWorkers = 65536;
  test_support::ProcessOptions options;
  options.binary = KVINDEXER_SERVER_BINARY;
  options.unset_env = {
      "KV_INDEXER_BACKEND",      "KV_INDEXER_BACKEND_PATH",
      "KV_INDEXER_DATA_DIR",     "KV_INDEXER_TLS_CERT_FILE",
      "KV_INDEXER_TLS_KEY_FILE", "KV_INDEXER_WRITE_TOKEN_FILE",
      "KV_INDEXER_MAX_WORKERS",  "KV_INDEXER_METRICS_WORKER_SERIES"};
  options.env = {{"KV_INDEXER_METRICS_ADDR", "127.0.0.1:0"}};
  absl::StatusOr<test_support::ListeningServer> server =
      test_support::StartListeningServer(std::move(options), 0, 20s);
  ASSERT_TRUE(server.ok()) << server.status();
  const int metrics_port =
      test_support::WaitForMetricsPort(*server->process, 20s);
  ASSERT_GT(metrics_port, 0) << server->process->Output();

  // Each worker registers itself with one seed-era apply (a Configure lists
  // at most 4,096), from a few threads at once.
  auto channel =
      grpc::CreateChannel(server->address, grpc::InsecureChannelCredentials());
  auto stub = kv_indexer::v1::KVIndexer::NewStub(channel);
  constexpr int kThreads = 8;
  std::vector<std::future<std::string>> senders;
  for (int t = 0; t < kThreads; ++t) {
    senders.push_back(std::async(std::launch::async, [&, t]() -> std::string {
      for (int i = t; i < kWorkers; i += kThreads) {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + 30s);
        kv_indexer::v1::ApplyExternalKvBatchResponse applied;
        const grpc::Status s = stub->ApplyExternalKvBatch(
            &context,
            Batch(absl::StrCat("w-", absl::Dec(i, absl::kZeroPad5)),
                  "10.0.0.1:9000"),
            &applied);
        if (!s.ok()) return s.error_message();
      }
      return "";
    }));
  }
  for (auto& sender : senders) EXPECT_EQ(sender.get(), "");
  ASSERT_FALSE(HasFailure());

  const std::string endpoint = absl::StrCat("http://", server->address);
  auto run = [&](std::vector<std::string> args) {
    return RunCtlForTest(args, {{"KV_INDEXER_ENDPOINT", endpoint}});
  };
  // The default deadline (5 s) is per page.
  CtlResult r = run({"workers", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  size_t listed = 0;
  for (size_t at = r.out.find("\"worker_id\""); at != std::string::npos;
       at = r.out.find("\"worker_id\"", at + 1)) {
    ++listed;
  }
  EXPECT_EQ(listed, static_cast<size_t>(kWorkers));
  EXPECT_THAT(r.out, HasSubstr("\"worker_id\":\"w-65535\""));

  r = run({"status"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("workers    65536 known"));

  absl::StatusOr<test_support::HttpResponse> scrape =
      test_support::HttpGet(metrics_port, "/metrics");
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(test_support::ScrapedValue(scrape->body, "kvindexer_workers"),
            kWorkers);
  EXPECT_EQ(test_support::ScrapedValue(scrape->body,
                                       "kvindexer_worker_series_omitted"),
            kWorkers - 1000);
  // The default cap: 1,000 workers' series, a few hundred bytes each.
  EXPECT_LT(scrape->body.size(), 2u << 20);

  stub.reset();
  EXPECT_TRUE(server->process->Stop(20s).ok()) << server->process->Output();
}

// The admin read token and the reflection switch on the real server
// (docs/security.md, "The admin read token"): admin reads without a token
// are refused with UNAUTHENTICATED (the CLI exits 4), with the read token or
// the write token they are answered, the read token cannot remove a worker;
// the router's reads and grpc.health.v1 stay open; with
// KV_INDEXER_GRPC_REFLECTION=off reflection is not served.
TEST(CtlServerE2eTest, AdminReadTokenAndNoReflection) {
  absl::StatusOr<std::unique_ptr<test_support::ScratchDir>> dir =
      test_support::ScratchDir::Create("ctl-e2e-read-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string write_file = (*dir)->Sub("write");
  const std::string read_file = (*dir)->Sub("read");
  std::ofstream(write_file) << "e2e-write-0123456789\n";
  std::ofstream(read_file) << "tok-R-7d3c9a1b5e2f4608\n";

  test_support::ProcessOptions options;
  options.binary = KVINDEXER_SERVER_BINARY;
  options.unset_env = {"KV_INDEXER_BACKEND", "KV_INDEXER_BACKEND_PATH",
                       "KV_INDEXER_DATA_DIR", "KV_INDEXER_TLS_CERT_FILE",
                       "KV_INDEXER_TLS_KEY_FILE"};
  options.env = {{"KV_INDEXER_WRITE_TOKEN_FILE", write_file},
                 {"KV_INDEXER_ADMIN_READ_TOKEN_FILE", read_file},
                 {"KV_INDEXER_GRPC_REFLECTION", "off"}};
  absl::StatusOr<test_support::ListeningServer> server =
      test_support::StartListeningServer(std::move(options), 0, 20s);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_THAT(server->process->Output(),
              HasSubstr("write_token=required admin_read_token=required"));
  EXPECT_THAT(server->process->Output(), HasSubstr("grpc_reflection=off"));
  EXPECT_THAT(server->process->Output(),
              ::testing::Not(HasSubstr("tok-R-7d3c")));
  const std::string endpoint = absl::StrCat("http://", server->address);
  auto channel =
      grpc::CreateChannel(server->address, grpc::InsecureChannelCredentials());

  auto run = [&](std::vector<std::string> args,
                 std::map<std::string, std::string, std::less<>> env = {}) {
    env.emplace("KV_INDEXER_ENDPOINT", endpoint);
    return RunCtlForTest(args, std::move(env));
  };
  CtlResult r = run({"status"});
  EXPECT_EQ(r.code, kExitRefused) << r.err;
  EXPECT_THAT(r.err, HasSubstr("UNAUTHENTICATED"));
  EXPECT_THAT(r.err, HasSubstr("KV_INDEXER_ADMIN_READ_TOKEN_FILE"));
  r = run({"status"}, {{"KV_INDEXER_ADMIN_READ_TOKEN_FILE", read_file}});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("server     kv-indexer-server "));
  r = run({"explain", "1,2", "--read-token-file", read_file});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  // Whoever may write may read: the CLI sends the write token then.
  r = run({"workers", "--token-file", write_file});
  EXPECT_EQ(r.code, kExitOk) << r.err;

  // The read token does not write.
  auto stub = kv_indexer::v1::KVIndexer::NewStub(channel);
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 10s);
    context.AddMetadata("authorization", "Bearer e2e-write-0123456789");
    kv_indexer::v1::ApplyExternalKvBatchResponse applied;
    ASSERT_TRUE(stub->ApplyExternalKvBatch(
                        &context,
                        Batch("w-1", "10.0.0.1:9000").Report(1, {1, 2}),
                        &applied)
                    .ok());
  }
  r = run({"remove-worker", "w-1", "--read-token-file", read_file});
  EXPECT_EQ(r.code, kExitRefused) << r.err;
  EXPECT_THAT(r.err, HasSubstr("PERMISSION_DENIED"));

  // The router's reads and the health service need nothing.
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 10s);
    kv_indexer::v1::MatchExternalKvPrefixResponse prefix;
    const grpc::Status s = stub->MatchExternalKvPrefix(
        &context, test_support::PrefixRequest({1, 2}), &prefix);
    EXPECT_TRUE(s.ok()) << s.error_message();
  }
  EXPECT_EQ(test_support::CheckHealth(channel, "", 10s).code,
            grpc::StatusCode::OK);
  // Reflection is off.
  EXPECT_EQ(test_support::ReflectedServices(channel, 10s), std::nullopt);

  stub.reset();
  EXPECT_TRUE(server->process->Stop(20s).ok()) << server->process->Output();
}

}  // namespace
}  // namespace kvindexer::ctl
