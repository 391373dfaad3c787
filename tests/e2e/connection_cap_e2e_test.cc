// The gRPC port's connection cap and its listener on the real
// kv-indexer-server (server/connection_listener.h): connections beyond
// KV_INDEXER_GRPC_MAX_CONNECTIONS are closed at once and counted while the
// server keeps serving the ones within the cap, and a server that runs out
// of file descriptors keeps accepting once some are free again. The extra
// connections are plain TCP sockets that never speak. Every wait is a
// bounded poll on a condition.
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "tests/support/http_get.h"
#include "tests/support/loopback_connection.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/requests.h"
#include "tests/support/server_process.h"

#ifndef KVINDEXER_SERVER_BINARY
#error "KVINDEXER_SERVER_BINARY must name the kv-indexer-server executable"
#endif

namespace kvindexer::e2e {
// Named rather than anonymous: unity builds merge anonymous namespaces.
namespace connection_cap_e2e_test {

using namespace std::chrono_literals;
using ::kv_indexer::v1::KVIndexer;
using ::kvindexer::test_support::Batch;
using ::kvindexer::test_support::ClosedByPeer;
using ::kvindexer::test_support::ConnectToLoopback;
using ::kvindexer::test_support::ListeningServer;
using ::kvindexer::test_support::PrefixRequest;
using ::kvindexer::test_support::ProcessOptions;
using ::kvindexer::test_support::WaitUntil;
using ::testing::HasSubstr;

constexpr auto kBound = 20s;
constexpr int kCap = 8;

ProcessOptions ServerOptions() {
  ProcessOptions options;
  options.binary = KVINDEXER_SERVER_BINARY;
  options.unset_env = {"KV_INDEXER_BACKEND",
                       "KV_INDEXER_BACKEND_PATH",
                       "KV_INDEXER_DATA_DIR",
                       "KV_INDEXER_TLS_CERT_FILE",
                       "KV_INDEXER_TLS_KEY_FILE",
                       "KV_INDEXER_WRITE_TOKEN_FILE",
                       "KV_INDEXER_ADMIN_READ_TOKEN_FILE"};
  return options;
}

// One sample of /metrics now; nullopt when absent or unreachable.
std::optional<double> Scrape(int metrics_port, std::string_view series) {
  absl::StatusOr<test_support::HttpResponse> response =
      test_support::HttpGet(metrics_port, "/metrics");
  if (!response.ok() || response->status != 200) return std::nullopt;
  return test_support::ScrapedValue(response->body, series);
}

// An apply and a prefix query over `channel`; OK when both are.
grpc::Status Serve(const std::shared_ptr<grpc::Channel>& channel,
                   bool wait_for_ready = false) {
  auto stub = KVIndexer::NewStub(channel);
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kBound);
    context.set_wait_for_ready(wait_for_ready);
    kv_indexer::v1::ApplyExternalKvBatchResponse applied;
    grpc::Status s = stub->ApplyExternalKvBatch(
        &context, Batch("w-1", "10.0.0.1:9000").Report(1, {1, 2}), &applied);
    if (!s.ok()) return s;
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kBound);
  kv_indexer::v1::MatchExternalKvPrefixResponse prefix;
  return stub->MatchExternalKvPrefix(&context, PrefixRequest({1, 2}), &prefix);
}

std::shared_ptr<grpc::Channel> NewChannel(const std::string& address) {
  // Its own connection: channels with equal arguments would share one.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                   args);
}

TEST(ConnectionCapE2eTest, ServesWithinTheCapAndRefusesBeyondIt) {
  ProcessOptions options = ServerOptions();
  options.env = {{"KV_INDEXER_GRPC_MAX_CONNECTIONS", std::to_string(kCap)},
                 {"KV_INDEXER_METRICS_ADDR", "127.0.0.1:0"}};
  absl::StatusOr<ListeningServer> server =
      test_support::StartListeningServer(std::move(options), 0, kBound);
  ASSERT_TRUE(server.ok()) << server.status();
  const int metrics_port =
      test_support::WaitForMetricsPort(*server->process, kBound);
  ASSERT_GT(metrics_port, 0);
  EXPECT_THAT(server->process->Output(),
              HasSubstr("grpc_max_connections=" + std::to_string(kCap)));

  // One client within the cap, connected and served.
  std::shared_ptr<grpc::Channel> client = NewChannel(server->address);
  ASSERT_TRUE(Serve(client).ok());

  // The rest of the cap taken by connections that never speak.
  std::vector<int> silent;
  for (int i = 1; i < kCap; ++i) {
    const int fd = ConnectToLoopback(server->port);
    ASSERT_GE(fd, 0);
    silent.push_back(fd);
  }
  ASSERT_TRUE(WaitUntil(
      [&] {
        return Scrape(metrics_port, "kvindexer_grpc_connections") == kCap;
      },
      kBound))
      << Scrape(metrics_port, "kvindexer_grpc_connections").value_or(-1);

  // Beyond the cap: each is closed at once, and the server stays up.
  constexpr int kBeyond = 16;
  for (int i = 0; i < kBeyond; ++i) {
    const int fd = ConnectToLoopback(server->port);
    ASSERT_GE(fd, 0);
    EXPECT_TRUE(ClosedByPeer(fd, kBound)) << "connection " << i;
    close(fd);
  }
  EXPECT_EQ(Scrape(metrics_port, "kvindexer_grpc_connections_refused_total"),
            kBeyond);
  EXPECT_EQ(Scrape(metrics_port, "kvindexer_grpc_max_connections"), kCap);
  EXPECT_TRUE(server->process->Running());
  EXPECT_THAT(server->process->Output(),
              HasSubstr("grpc listener: refused a connection: 8 are open"));

  // The client within the cap is still served.
  EXPECT_TRUE(Serve(client).ok());
  // A new client cannot connect while the cap is taken: it fails loudly.
  {
    std::shared_ptr<grpc::Channel> late = NewChannel(server->address);
    auto stub = KVIndexer::NewStub(late);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 2s);
    kv_indexer::v1::MatchExternalKvPrefixResponse prefix;
    const grpc::Status s =
        stub->MatchExternalKvPrefix(&context, PrefixRequest({1}), &prefix);
    EXPECT_TRUE(s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
        << s.error_code() << " " << s.error_message();
  }

  // Once the silent ones leave, their places are free again.
  for (int fd : silent) close(fd);
  ASSERT_TRUE(WaitUntil(
      [&] {
        const std::optional<double> open =
            Scrape(metrics_port, "kvindexer_grpc_connections");
        return open.has_value() && *open <= 1;
      },
      kBound));
  EXPECT_TRUE(Serve(NewChannel(server->address), /*wait_for_ready=*/true).ok());
  EXPECT_TRUE(Serve(client).ok());

  client.reset();
  EXPECT_TRUE(server->process->Stop(kBound).ok()) << server->process->Output();
}

// gRPC 1.51's own listener stops accepting for good after an accept that
// fails with EMFILE. The server's listener pauses and resumes instead: run
// with 128 descriptors, flooded past them, it still takes a new client once
// the flood has gone.
TEST(ConnectionCapE2eTest, KeepsAcceptingAfterRunningOutOfDescriptors) {
  ProcessOptions options = ServerOptions();
  // The shell lowers both limits, so the server cannot raise them again.
  options.args = {"-c", "ulimit -n 128 && exec \"$0\"", options.binary};
  options.binary = "/bin/sh";
  absl::StatusOr<ListeningServer> server =
      test_support::StartListeningServer(std::move(options), 0, kBound);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_THAT(server->process->Output(),
              HasSubstr("KV_INDEXER_GRPC_MAX_CONNECTIONS=4096 needs 5120 file "
                        "descriptors"));

  std::vector<int> flood;
  for (int i = 0; i < 200; ++i) {
    const int fd = ConnectToLoopback(server->port);
    ASSERT_GE(fd, 0);
    flood.push_back(fd);
  }
  ASSERT_TRUE(server->process->WaitForOutput(
      "grpc listener: cannot accept a connection", kBound))
      << server->process->Output();
  EXPECT_TRUE(server->process->Running());

  for (int fd : flood) close(fd);
  EXPECT_TRUE(Serve(NewChannel(server->address), /*wait_for_ready=*/true).ok())
      << server->process->Output();
  EXPECT_TRUE(server->process->Stop(kBound).ok()) << server->process->Output();
}

// A bad value of the new variables stops the server at start (exit 2),
// naming the variable.
TEST(ConnectionCapE2eTest, BadValuesStopTheStart) {
  for (const auto& [var, value] :
       std::vector<std::pair<std::string, std::string>>{
           {"KV_INDEXER_GRPC_MAX_CONNECTIONS", "0"},
           {"KV_INDEXER_APPLY_QUEUE_MAX", "lots"},
           {"KV_INDEXER_GRPC_MEMORY_QUOTA_MIB", "8"},
           {"KV_INDEXER_GRPC_REFLECTION", "sometimes"}}) {
    ProcessOptions options = ServerOptions();
    options.env = {{var, value}, {"KV_INDEXER_LISTEN_ADDR", "127.0.0.1:0"}};
    absl::StatusOr<std::unique_ptr<test_support::ServerProcess>> process =
        test_support::ServerProcess::Start(std::move(options));
    ASSERT_TRUE(process.ok()) << process.status();
    const std::optional<test_support::ExitStatus> exit =
        (*process)->WaitForExit(kBound);
    ASSERT_TRUE(exit.has_value()) << var;
    EXPECT_TRUE(exit->exited && exit->code == 2) << exit->ToString();
    EXPECT_THAT((*process)->Output(), HasSubstr(var + "=\"" + value + "\""));
  }
}

}  // namespace connection_cap_e2e_test
}  // namespace kvindexer::e2e
