// The replay bound under sustained writes (docs/durability.md, "The replay
// bound"), on the real binary: a server with an index large enough that
// each checkpoint build takes longer than the writes that fill a rotation
// takes full-rate REPORT/REVOKE churn from two clients. The log a restart
// would replay never exceeds KV_INDEXER_MAX_REPLAY_BYTES (sampled from
// /metrics throughout), writes waited for builds, and a SIGKILL in the
// middle of the churn restarts replaying no more than the bound. This is the
// short sample CI runs of the soak in BENCHMARKS.md ("Recovery after
// sustained writes"); KV_INDEXER_CHURN_APPLIES lengthens it.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/wire_vocabulary.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "tests/e2e/durability_fixture.h"
#include "tests/e2e/durability_server.h"
#include "tests/support/http_get.h"
#include "tests/support/metrics_scrape.h"

namespace kvindexer::e2e {
namespace durability_churn_test {
namespace {

namespace v1 = ::kv_indexer::v1;
namespace admin_v1 = ::kvindexer::admin::v1;
using ::kvindexer::test_support::HttpGet;
using ::kvindexer::test_support::HttpResponse;
using ::kvindexer::test_support::ScrapedValue;

constexpr uint64_t kCheckpointBytes = 1ull << 20;  // the smallest accepted
constexpr uint64_t kMaxReplayBytes = 2 * kCheckpointBytes;
// About 500,000 placements: a build loads and rewrites them, which takes
// far longer than the ~8 churn applies that fill a 1 MiB rotation.
constexpr int kPreloadApplies = 32;

uint64_t ChurnApplies() {
  uint64_t n = 160;
  if (const char* v = std::getenv("KV_INDEXER_CHURN_APPLIES")) {
    EXPECT_TRUE(absl::SimpleAtoi(v, &n)) << "KV_INDEXER_CHURN_APPLIES=" << v;
  }
  return n;
}

v1::ApplyExternalKvBatchRequest FullBatch(const std::string& worker,
                                          v1::ExternalKvActionType type,
                                          uint64_t seed) {
  v1::ApplyExternalKvBatchRequest batch;
  batch.set_worker_id(worker);
  batch.set_worker_address(absl::StrCat("10.0.0.1:", seed % 1000));
  v1::ExternalKvAction* action = batch.add_actions();
  action->set_type(type);
  action->set_tier(v1::TIER_DRAM);
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < kMaxHashesPerRequest; ++i) {
    action->add_hashes(static_cast<int64_t>(rng()));
  }
  return batch;
}

bool Send(DurableServer& server, const v1::ApplyExternalKvBatchRequest& req) {
  v1::ApplyExternalKvBatchResponse resp;
  return server.stub()
      .ApplyExternalKvBatch(Deadline(60s).get(), req, &resp)
      .ok();
}

class DurabilityChurnTest : public DurabilityTest {
 protected:
  DurabilityChurnTest() : DurabilityTest("kvindexer-durability-churn-") {}
  void SetUp() override {
    DurabilityTest::SetUp();
    if (HasFatalFailure()) return;
    options_.checkpoint_bytes = kCheckpointBytes;
    options_.extra_env["KV_INDEXER_MAX_REPLAY_BYTES"] =
        std::to_string(kMaxReplayBytes);
    options_.extra_env["KV_INDEXER_METRICS_ADDR"] = "127.0.0.1:0";
  }
};

TEST_F(DurabilityChurnTest, TheReplayedLogStaysWithinTheBound) {
  std::unique_ptr<DurableServer> server = DurableServer::Start(options_);
  ASSERT_NE(server, nullptr);
  const int port = MetricsPort(*server);
  ASSERT_NE(port, 0) << server->process().Output();
  for (int i = 0; i < kPreloadApplies; ++i) {
    ASSERT_TRUE(Send(*server, FullBatch(absl::StrCat("preload-", i % 8),
                                        v1::ACTION_REPORT, 1000 + i)));
  }

  // Two clients, each REPORTing and REVOKEing its own 16,384 hashes in
  // turn as fast as the server answers.
  const uint64_t total = ChurnApplies();
  std::atomic<uint64_t> sent{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int c = 0; c < 2; ++c) {
    clients.emplace_back([&, c] {
      const std::string worker = absl::StrCat("churn-", c);
      const auto report = FullBatch(worker, v1::ACTION_REPORT, 7 + c);
      const auto revoke = FullBatch(worker, v1::ACTION_REVOKE, 7 + c);
      for (uint64_t n = 0; !stop.load(); ++n) {
        if (!Send(*server, n % 2 == 0 ? report : revoke)) return;  // killed
        sent.fetch_add(1);
      }
    });
  }
  double most_tail = 0;
  double stalls = 0;
  bool scraped = false;
  const auto give_up = std::chrono::steady_clock::now() + 100s;
  while (sent.load() < total && std::chrono::steady_clock::now() < give_up) {
    // A sample every 20 ms (pacing, not synchronisation): the scrapes must
    // not take the server's CPU from the churn.
    std::this_thread::sleep_for(20ms);
    absl::StatusOr<HttpResponse> scrape = HttpGet(port, "/metrics");
    if (!scrape.ok()) continue;
    scraped = true;
    most_tail = std::max(
        most_tail, ScrapedValue(scrape->body, "kvindexer_wal_replay_tail_bytes")
                       .value_or(-1));
    stalls = ScrapedValue(scrape->body, "kvindexer_wal_write_stalls_total")
                 .value_or(-1);
    EXPECT_EQ(ScrapedValue(scrape->body, "kvindexer_wal_replay_max_bytes"),
              static_cast<double>(kMaxReplayBytes));
  }
  EXPECT_GE(sent.load(), total) << "the churn did not finish in time";
  // The admin API says the same as the metrics.
  const admin_v1::DurabilityInfo durability = Durability(*server);
  EXPECT_EQ(durability.replay_max_bytes(), kMaxReplayBytes);
  EXPECT_LE(durability.replay_tail_bytes(), kMaxReplayBytes);
  EXPECT_GT(durability.write_stalls(), 0u);
  // Killed in the middle of the churn: applies are in flight.
  server->process().Kill();
  stop = true;
  for (std::thread& t : clients) t.join();
  const std::string output = server->process().Output();
  server.reset();

  ASSERT_TRUE(scraped);
  EXPECT_LE(most_tail, static_cast<double>(kMaxReplayBytes));
  EXPECT_GT(most_tail, 0.0);
  // ~20 MB of log went through rotations of 1 MiB whose builds each take
  // longer than filling one: writes must have waited.
  EXPECT_GT(stalls, 0.0) << output;

  std::unique_ptr<DurableServer> again = DurableServer::Start(options_);
  ASSERT_NE(again, nullptr);
  const std::optional<RecoveredLine> recovered = again->Recovered();
  ASSERT_TRUE(recovered.has_value());
  EXPECT_LE(recovered->log_bytes, kMaxReplayBytes) << recovered->text;
  // The preload survives; of the churn, at most one REPORT per client that
  // no REVOKE followed.
  EXPECT_GE(recovered->placements, uint64_t{kPreloadApplies} * 16000)
      << recovered->text;
  EXPECT_LE(recovered->placements,
            uint64_t{kPreloadApplies + 2} * kMaxHashesPerRequest)
      << recovered->text;
  again->Stop();
}

}  // namespace
}  // namespace durability_churn_test
}  // namespace kvindexer::e2e
