// A fleet replica cut off from NATS (docs/fleet.md, "A replica cut off from
// the log") over real processes: a kv-indexer-server replica
// (KV_INDEXER_EVENT_SOURCE=jetstream) follows the event log on a real
// nats-server, fed by one kv-indexer-bridge. The NATS server is stopped
// (SIGSTOP): within KV_INDEXER_FLEET_MAX_SILENCE_MS the replica reports
// NOT_SERVING on grpc.health.v1, /readyz answers 503 with the reason and
// GetStats says NOT_SERVING, while reads answer what it held. NATS
// resumed: SERVING again, and the batch published meanwhile arrives.
//
// Requests to NATS time out only after KV_INDEXER_NATS_TIMEOUT_MS = 10 s,
// far beyond the 500 ms bound, so nothing but the silence rule can turn
// the replica NOT_SERVING within the test's window. No sleeps as
// synchronisation: effects are awaited in bounded loops.
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/fleet_e2e_harness.h"
#include "tests/support/grpc_probes.h"
#include "tests/support/http_get.h"
#include "tests/support/nats_server.h"
#include "tests/support/server_process.h"

namespace kvindexer::bridge::testing {
// Named rather than anonymous: unity builds merge anonymous namespaces.
namespace replica_partition_e2e_test {

using ::kvindexer::test_support::kHealthNotServing;
using ::kvindexer::test_support::kHealthServing;
using ::kvindexer::test_support::NatsServer;
using ::kvindexer::test_support::WaitUntil;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr auto kMaxSilence = 500ms;
// How soon after the stop NOT_SERVING must show: the bound, the watch's
// tick and a busy machine's delays, and well short of the NATS timeout.
constexpr auto kNotServingWithin = 5s;
constexpr uint32_t kNatsTimeoutMs = 10000;

class ReplicaPartitionE2eTest : public ::testing::Test {
 protected:
  void SetUp() override { KVINDEXER_SKIP_WITHOUT_NATS_SERVER(); }
  void TearDown() override {
    if (!HasFailure()) return;
    if (replica_ != nullptr) {
      std::cerr << "--- replica\n" << replica_->process().Output();
    }
    for (const auto& w : workers_) {
      if (w->bridge() != nullptr) {
        std::cerr << "--- bridge\n" << w->bridge()->Output();
      }
    }
    if (nats_ != nullptr) std::cerr << "--- nats\n" << nats_->Output();
  }

  std::unique_ptr<NatsServer> nats_;
  std::unique_ptr<FleetReplica> replica_;
  std::vector<std::unique_ptr<FleetWorker>> workers_;
};

TEST_F(ReplicaPartitionE2eTest, ACutOffReplicaStopsServingAndComesBack) {
  absl::StatusOr<std::unique_ptr<NatsServer>> nats = NatsServer::Start();
  ASSERT_TRUE(nats.ok()) << nats.status();
  nats_ = *std::move(nats);
  const FleetLogTarget log{
      .urls = nats_->url(), .replicas = 1, .timeout_ms = kNatsTimeoutMs};
  absl::StatusOr<std::unique_ptr<FleetReplica>> replica =
      FleetReplica::Start(log, {{"KV_INDEXER_FLEET_MAX_SILENCE_MS",
                                 std::to_string(kMaxSilence.count())}});
  ASSERT_TRUE(replica.ok()) << replica.status();
  replica_ = *std::move(replica);
  workers_.push_back(std::make_unique<FleetWorker>(0, 77));
  FleetWorker& worker = *workers_.front();
  const absl::Status bridge = worker.StartBridge(log);
  ASSERT_TRUE(bridge.ok()) << bridge;
  for (int i = 0; i < 5; ++i) worker.PublishRandomBatch();
  const absl::StatusOr<uint64_t> end = WaitForModel(log, *replica_, workers_);
  ASSERT_TRUE(end.ok()) << end.status();
  ASSERT_TRUE(WaitUntil([&] { return replica_->Health() == kHealthServing; },
                        kFleetBound, 20ms));
  const std::vector<int64_t> universe = Universe(workers_);
  const std::set<int64_t> held_before = worker.model();

  const auto stopped_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(nats_->Pause());
  ASSERT_TRUE(WaitUntil([&] { return replica_->Health() == kHealthNotServing; },
                        kNotServingWithin, 10ms))
      << "still SERVING " << kNotServingWithin.count()
      << " s after NATS stopped";
  const auto noticed_after = std::chrono::steady_clock::now() - stopped_at;
  EXPECT_LT(noticed_after, kNotServingWithin);
  std::cerr << "NOT_SERVING "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   noticed_after)
                   .count()
            << " ms after NATS stopped\n";

  // /readyz and GetStats agree, with the reason.
  const absl::StatusOr<test_support::HttpResponse> not_ready =
      replica_->Readyz();
  ASSERT_TRUE(not_ready.ok()) << not_ready.status();
  EXPECT_EQ(not_ready->status, 503);
  EXPECT_THAT(not_ready->body,
              AllOf(HasSubstr("no answer from the fleet event log"),
                    HasSubstr("KV_INDEXER_FLEET_MAX_SILENCE_MS=500")));
  EXPECT_EQ(replica_->StatsHealth(), "NOT_SERVING");
  // Reads answer what the replica held.
  const std::optional<std::set<int64_t>> held =
      replica_->Held(worker.id(), universe);
  ASSERT_TRUE(held.has_value());
  EXPECT_EQ(*held, held_before);
  // The bridge buffers this batch until NATS answers again.
  worker.PublishRandomBatch();

  ASSERT_TRUE(nats_->Resume());
  ASSERT_TRUE(WaitUntil([&] { return replica_->Health() == kHealthServing; },
                        kFleetBound, 20ms))
      << "not SERVING again after NATS resumed";
  const absl::StatusOr<test_support::HttpResponse> ready = replica_->Readyz();
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_EQ(ready->status, 200) << ready->body;
  EXPECT_EQ(replica_->StatsHealth(), "SERVING");
  const absl::StatusOr<uint64_t> after = WaitForModel(log, *replica_, workers_);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_GT(*after, *end);
  EXPECT_THAT(replica_->process().Output(),
              HasSubstr("the fleet event log answers again after"));
}

}  // namespace replica_partition_e2e_test
}  // namespace kvindexer::bridge::testing
