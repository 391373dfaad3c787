// End-to-end worker liveness (docs/bridge-events.md, "Recovery > Worker
// liveness"; docs/contract.md, "Worker liveness and removal"): the real
// kv-indexer-server sweeping every 100 ms, the real kv-indexer-bridge
// heartbeating with a 300 ms TTL, FakeSglangPublisher as the worker's event
// stream and FakeWorkerPort as the worker's HTTP port the bridge checks.
//
// A worker that goes silent (its port closes, its publisher stops) is
// cleared by the server's sweeper and recovered when it comes back; a worker
// whose port refuses (R66 (c)) never heartbeats and so is never cleared.
//
// No sleeps as synchronisation: effects are awaited in bounded loops. The
// "still held" checks wait for the bridge to have checked the worker (each
// successful check is followed by a heartbeat, 100 ms apart) or failed to
// (its stats line counts the failures) a number of times, not for a
// duration.
#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "tests/e2e/recovery_e2e_harness.h"
#include "tests/support/fake_sglang_publisher.h"
#include "tests/support/fake_worker_port.h"
#include "tests/support/server_process.h"

namespace kvindexer::bridge::testing {
namespace liveness_e2e_test {

using ::kvindexer::test_support::LogField;
using ::kvindexer::test_support::ServerProcess;
using ::kvindexer::test_support::WaitUntil;

const std::map<std::string, std::string> kSweepEvery100Ms = {
    {"KV_INDEXER_LIVENESS", "1"}, {"KV_INDEXER_LIVENESS_SWEEP_MS", "100"}};

std::string Show(const std::set<int64_t>& set) {
  std::string out = "{";
  for (int64_t h : set) out += (out.size() > 1 ? ", " : "") + std::to_string(h);
  return out + "}";
}

// A counter of the bridge's stats line; nullopt when absent or not a number.
std::optional<uint64_t> Counter(std::string_view line, std::string_view key) {
  std::optional<std::string> value = LogField(line, key);
  if (!value || value->empty()) return std::nullopt;
  uint64_t n = 0;
  for (char c : *value) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n;
}

class LivenessE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GT(worker_.port(), 0);
    indexer_ = IndexerUnderTest::Start(0, kSweepEvery100Ms);
    ASSERT_NE(indexer_, nullptr);
  }

  void TearDown() override {
    if (HasFailure()) {
      if (bridge_) std::cerr << "--- bridge output\n" << bridge_->Output();
      if (indexer_) {
        std::cerr << "--- server output\n" << indexer_->process().Output();
      }
    }
    if (bridge_ && bridge_->Running()) StopBridge(*bridge_);
  }

  // A bridge in mode L (a dead worker's replay socket would be dead too)
  // heartbeating with a 300 ms TTL for the worker at `worker_address`.
  void StartHeartbeating(FakeSglangPublisher& publisher,
                         const std::string& worker_address) {
    bridge_ = StartBridge(*indexer_, publisher, /*with_replay=*/false,
                          {{"KV_INDEXER_HEARTBEAT_TTL_MS", "300"},
                           {"KV_INDEXER_WORKER_ADDRESS", worker_address}});
    ASSERT_NE(bridge_, nullptr);
  }

  ::testing::AssertionResult HeldBecomes(const std::set<int64_t>& expected) {
    std::set<int64_t> last;
    if (WaitUntil(
            [&] {
              last = indexer_->HeldOrEmpty(universe_);
              return last == expected;
            },
            kEffectBound, 20ms)) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "held " << Show(last) << ", expected " << Show(expected);
  }

  // Waits for a stats line of the bridge that satisfies `done` and returns
  // it; nullopt (with the last line seen) when none comes within the bound.
  std::optional<std::string> StatsLineWhere(
      const std::function<bool(std::string_view)>& done) {
    const auto deadline = std::chrono::steady_clock::now() + kEffectBound;
    std::string last;
    while (std::chrono::steady_clock::now() < deadline) {
      std::optional<std::string> line = NextStatsLine(*bridge_);
      if (!line) break;
      if (done(*line)) return line;
      last = *line;
    }
    ADD_FAILURE() << "no matching stats line; last: " << last;
    return std::nullopt;
  }

  // Waits until the bridge has checked the worker `n` more times: `n`
  // heartbeats, 100 ms apart, at least.
  ::testing::AssertionResult WorkerCheckedAgain(size_t n) {
    const size_t target = worker_.accepted() + n;
    if (WaitUntil([&] { return worker_.accepted() >= target; }, kEffectBound)) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "the worker port accepted " << worker_.accepted()
           << " connections, expected " << target;
  }

  const std::vector<int64_t> universe_ = {1, 2, 3, 4, 5, 6, 7};
  FakeWorkerPort worker_;
  std::unique_ptr<IndexerUnderTest> indexer_;
  std::unique_ptr<ServerProcess> bridge_;
};

TEST_F(LivenessE2eTest, SilentWorkerIsClearedAndRecoveredWhenBack) {
  FakeSglangPublisher publisher;
  StartHeartbeating(publisher, worker_.url());
  publisher.Publish(Payload({Store({1, 2, 3})}));
  ASSERT_TRUE(HeldBecomes({1, 2, 3}));

  // While it heartbeats the worker outlives TTLs and sweeps.
  ASSERT_TRUE(WorkerCheckedAgain(8));
  EXPECT_EQ(indexer_->HeldOrEmpty(universe_), (std::set<int64_t>{1, 2, 3}));

  // The worker goes silent: its port closes and its publisher stops. The
  // bridge's checks fail, its heartbeats stop, and the sweeper clears it.
  worker_.Close();
  publisher.StopLive();
  ASSERT_TRUE(HeldBecomes({}));
  EXPECT_TRUE(indexer_->process().WaitForLine(
      [](std::string_view line) {
        return line.find("heartbeat expired") != std::string_view::npos &&
               line.find(kWorkerId) != std::string_view::npos;
      },
      kEffectBound))
      << "the server never logged the liveness clear";

  // The worker comes back: its port reopens and its publisher restarts
  // from sequence 0. The bridge synchronises the new incarnation and
  // heartbeats again.
  ASSERT_TRUE(worker_.Open());
  publisher.Restart();
  const size_t subscriptions = publisher.subscriptions();
  publisher.StartLive();
  ASSERT_TRUE(WaitUntil(
      [&] { return publisher.subscriptions() > subscriptions; }, kStartBound));
  publisher.Publish(Payload({Store({4, 5})}));
  publisher.Publish(Payload({Store({6}), Remove({4})}));
  ASSERT_TRUE(HeldBecomes({5, 6}));
  EXPECT_EQ(indexer_->Checkpoint(), std::optional<uint64_t>(1));

  // Marked again and kept: the blocks survive further TTLs and sweeps.
  ASSERT_TRUE(WorkerCheckedAgain(8));
  EXPECT_EQ(indexer_->HeldOrEmpty(universe_), (std::set<int64_t>{5, 6}));
  // The counters of the stats line the bridge prints when it stops.
  StopBridge(*bridge_);
  const std::string output = bridge_->Output();
  const size_t stopped = output.rfind("bridge stopped: ");
  ASSERT_NE(stopped, std::string::npos) << output;
  const std::optional<std::string> line =
      output.substr(stopped, output.find('\n', stopped) - stopped);
  EXPECT_EQ(LogField(*line, "state"), "exact") << *line;
  EXPECT_GE(Counter(*line, "heartbeats").value_or(0), 8u) << *line;
  EXPECT_GE(Counter(*line, "heartbeat_probe_failures").value_or(0), 1u)
      << *line;
}

// R66 (c): the worker's port refuses (http://127.0.0.1:1), so the bridge
// never heartbeats, the server never marks the worker, and the sweeper
// leaves it alone however long it runs.
TEST_F(LivenessE2eTest, R66cWorkerThatRefusesIsNeverHeartbeatNorCleared) {
  FakeSglangPublisher publisher;
  StartHeartbeating(publisher, "http://127.0.0.1:1");
  publisher.Publish(Payload({Store({7})}));
  ASSERT_TRUE(HeldBecomes({7}));
  // Ten failed checks, 100 ms apart: over three TTLs and many sweeps.
  std::optional<std::string> line = StatsLineWhere([](std::string_view l) {
    return Counter(l, "heartbeat_probe_failures").value_or(0) >= 10;
  });
  ASSERT_TRUE(line);
  EXPECT_EQ(Counter(*line, "heartbeats"), std::optional<uint64_t>(0)) << *line;
  EXPECT_EQ(indexer_->HeldOrEmpty(universe_), (std::set<int64_t>{7}));
  EXPECT_EQ(indexer_->process().Output().find("heartbeat expired"),
            std::string::npos);
}

}  // namespace liveness_e2e_test
}  // namespace kvindexer::bridge::testing
