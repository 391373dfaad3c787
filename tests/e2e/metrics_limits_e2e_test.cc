// The bounds of the metrics endpoint (docs/metrics.md, "Limits") on the real
// kv-indexer-server, against the attacks they answer, replayed by a raw
// client without credentials: an endless request line, slow senders, and
// idle connections far beyond the connection cap. The server's memory and
// descriptors are read from /proc; probes must keep answering promptly and
// the gRPC port must keep working.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "absl/strings/numbers.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "tests/support/http_get.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/raw_http_client.h"
#include "tests/support/requests.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/server_process.h"

#ifndef KVINDEXER_SERVER_BINARY
#error "KVINDEXER_SERVER_BINARY must name the kv-indexer-server executable"
#endif

namespace kvindexer::e2e {
// Named rather than anonymous: CI compiles test files in batches (unity
// builds), where anonymous namespaces of neighbouring files merge.
namespace metrics_limits_e2e_test {

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
using ::kvindexer::test_support::RawHttpClient;
using ::kvindexer::test_support::ServerProcess;
using ::kvindexer::test_support::StartListeningServer;
using ::kvindexer::test_support::WaitForMetricsPort;
using ::kvindexer::test_support::WaitUntil;
using SteadyClock = std::chrono::steady_clock;

constexpr auto kBound = 20s;
// How fast a probe must answer while the endpoint is under attack: far
// below the endpoint's 5 s request timeout, far above a loaded CI
// machine's jitter.
constexpr auto kProbeBound = 1500ms;
// The endpoint's default connection cap (common/metrics_http_limits.h).
constexpr size_t kConnectionCap = 64;

// A server with its metrics endpoint on a free loopback port, a data
// directory (so that it keeps its log open and writes to it), and a soft
// and hard limit of 256 descriptors: an endpoint without a connection cap
// would run it out of descriptors within this test.
class MetricsLimitsE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = test_support::ScratchDir::Create("metrics-limits-e2e-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *std::move(dir);
    ProcessOptions options;
    options.binary = "/bin/sh";
    options.args = {"-c", "ulimit -n 256 && exec \"$0\"",
                    KVINDEXER_SERVER_BINARY};
    options.unset_env = {"KV_INDEXER_BACKEND", "KV_INDEXER_BACKEND_PATH",
                         "KV_INDEXER_LOG_LEVEL"};
    options.env = {{"KV_INDEXER_METRICS_ADDR", "127.0.0.1:0"},
                   {"KV_INDEXER_DATA_DIR", dir_->path() + "/data"}};
    auto server = StartListeningServer(std::move(options), /*port=*/0, kBound);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    port_ = WaitForMetricsPort(*server_.process, kBound);
    ASSERT_NE(port_, 0) << server_.process->Output();
    ExpectProbesPrompt();
  }

  void TearDown() override {
    if (server_.process != nullptr) {
      EXPECT_TRUE(server_.process->Stop(kBound).ok())
          << server_.process->Output();
    }
  }

  // /healthz and /readyz answer 200, each within kProbeBound.
  void ExpectProbesPrompt() {
    for (const char* path : {"/healthz", "/readyz"}) {
      const SteadyClock::time_point start = SteadyClock::now();
      absl::StatusOr<HttpResponse> probe = HttpGet(port_, path, kProbeBound);
      ASSERT_TRUE(probe.ok()) << path << ": " << probe.status();
      EXPECT_EQ(probe->status, 200) << path << ": " << probe->body;
      EXPECT_LT(SteadyClock::now() - start, kProbeBound) << path;
    }
  }

  RawHttpClient Connect() {
    auto client = RawHttpClient::Connect(port_, kBound);
    EXPECT_TRUE(client.ok()) << client.status();
    return *std::move(client);
  }

  // The server's peak resident memory so far (VmHWM), in bytes; 0 when
  // unreadable. The peak, because memory taken during an attack may be
  // given back once the connection closes.
  size_t PeakResidentBytes() const {
    std::ifstream status("/proc/" + std::to_string(server_.process->pid()) +
                         "/status");
    std::string line;
    while (std::getline(status, line)) {
      if (!line.starts_with("VmHWM:")) continue;
      std::string_view kb = line;
      kb.remove_prefix(6);
      kb.remove_suffix(kb.size() - kb.find("kB"));
      size_t value = 0;
      if (absl::SimpleAtoi(std::string(kb), &value)) return value * 1024;
    }
    return 0;
  }

  // Descriptors the server has open.
  size_t OpenDescriptors() const {
    std::error_code error;
    size_t count = 0;
    for (std::filesystem::directory_iterator it(
             "/proc/" + std::to_string(server_.process->pid()) + "/fd", error);
         !error && it != std::filesystem::directory_iterator();
         it.increment(error)) {
      ++count;
    }
    return count;
  }

  // One apply and one prefix query on a new gRPC channel: the server can
  // still accept a connection, write its log and answer.
  void ExpectGrpcWorks(int64_t round) {
    auto stub = KVIndexer::NewStub(grpc::CreateChannel(
        server_.address, grpc::InsecureChannelCredentials()));
    grpc::ClientContext apply_context;
    apply_context.set_deadline(std::chrono::system_clock::now() + 10s);
    ApplyExternalKvBatchResponse applied;
    const grpc::Status apply = stub->ApplyExternalKvBatch(
        &apply_context,
        Batch("w1", "10.0.0.1:9000").Report(kTierHbm, {100 + round}), &applied);
    ASSERT_TRUE(apply.ok()) << apply.error_message();
    grpc::ClientContext query_context;
    query_context.set_deadline(std::chrono::system_clock::now() + 10s);
    MatchExternalKvPrefixResponse matched;
    const grpc::Status query = stub->MatchExternalKvPrefix(
        &query_context, PrefixRequest({100 + round}), &matched);
    ASSERT_TRUE(query.ok()) << query.error_message();
  }

  std::unique_ptr<test_support::ScratchDir> dir_;
  ListeningServer server_;
  int port_ = 0;
};

// Before the bound, 200 MiB without a newline took the server from 21 to
// 253 MiB of resident memory. The server may now read at most 8 KiB of a
// head, and closes the connection once it has.
TEST_F(MetricsLimitsE2eTest, AnEndlessRequestLineIsCutOffAndMemoryStaysFlat) {
  const size_t rss_before = PeakResidentBytes();
  ASSERT_GT(rss_before, 0u);
  RawHttpClient client = Connect();
  const std::string chunk(1 << 20, 'a');
  constexpr size_t kAttack = 200u << 20;
  size_t sent = 0;
  while (sent < kAttack && client.Send(chunk, kBound).ok()) {
    sent += chunk.size();
  }
  // The server closed the connection long before the attack was through.
  EXPECT_LT(sent, 32u << 20);
  EXPECT_TRUE(client.WaitForClose(kBound));
  const size_t rss_after = PeakResidentBytes();
  EXPECT_LT(rss_after, rss_before + (16u << 20))
      << "before " << rss_before << " after " << rss_after;
  ExpectProbesPrompt();
}

// Before, two slow senders held both request threads and the probes timed
// out.
TEST_F(MetricsLimitsE2eTest, SlowSendersDoNotDelayProbes) {
  std::vector<RawHttpClient> slow;
  for (int i = 0; i < 32; ++i) {
    slow.push_back(Connect());
    const char* path = i % 2 == 0 ? "/metrics" : "/readyz";
    ASSERT_TRUE(
        slow.back()
            .Send(std::string("GET ") + path + " HTTP/1.1\r\nHost: ", kBound)
            .ok());
  }
  ExpectProbesPrompt();
  // A trickle on every one of them changes nothing.
  for (RawHttpClient& client : slow) {
    ASSERT_TRUE(client.Send("x", kBound).ok());
  }
  ExpectProbesPrompt();
  absl::StatusOr<HttpResponse> scrape = HttpGet(port_, "/metrics", kBound);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(scrape->status, 200);
}

// Before, idle connections took descriptors until the server could not
// rotate its log ("Too many open files").
TEST_F(MetricsLimitsE2eTest, IdleConnectionsBeyondTheCapTakeNoMoreDescriptors) {
  const size_t descriptors_before = OpenDescriptors();
  ASSERT_GT(descriptors_before, 0u);
  // The server's own descriptors move a little (its log, gRPC), and one
  // more is open for a moment when a connection is refused at the cap.
  const size_t ceiling = descriptors_before + kConnectionCap + 4;
  std::vector<RawHttpClient> idle;
  for (size_t i = 0; i < 4 * kConnectionCap; ++i) {
    idle.push_back(Connect());
    if (i % 16 == 15) {
      ASSERT_LE(OpenDescriptors(), ceiling) << "after " << i + 1;
    }
  }
  // The oldest were closed to make room for the newer ones.
  EXPECT_TRUE(idle.front().WaitForClose(kBound));
  EXPECT_LE(OpenDescriptors(), ceiling);
  ExpectProbesPrompt();
  for (int64_t round = 0; round < 3; ++round) ExpectGrpcWorks(round);
  EXPECT_LE(OpenDescriptors(), ceiling + 8);  // the gRPC channels
}

}  // namespace metrics_limits_e2e_test
}  // namespace kvindexer::e2e
