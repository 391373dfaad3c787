// The indexer restart of recovery_e2e_test.cc (F1/F2), with a data directory
// (docs/durability.md): FakeSglangPublisher -> the real kv-indexer-bridge
// (gated, with replay) -> the real kv-indexer-server with
// KV_INDEXER_DATA_DIR. After the server is stopped (SIGTERM or SIGKILL) and
// restarted on the same port and directory, the index is complete at once
// and the bridge resends nothing: its probe finds the checkpoint it left,
// so no replay, snapshot, install or resynchronisation follows, and the
// applies it sends afterwards are exactly the new batches.
//
// No sleeps as synchronisation: effects and the bridge's stats lines are
// awaited in bounded loops.
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "gtest/gtest.h"
#include "tests/e2e/recovery_e2e_harness.h"
#include "tests/support/fake_sglang_publisher.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/server_process.h"

namespace kvindexer::bridge::testing {
namespace {

using ::kvindexer::test_support::LogField;
using ::kvindexer::test_support::ScratchDir;
using ::kvindexer::test_support::ServerProcess;
using ::kvindexer::test_support::WaitUntil;

// The counters of one bridge stats line that this test compares.
struct BridgeCounters {
  uint64_t rpcs_sent = 0;
  uint64_t rpcs_failed = 0;
  uint64_t probes = 0;
  uint64_t hashes = 0;
  uint64_t replays = 0;
  uint64_t replayed_batches = 0;
  uint64_t snapshots = 0;
  uint64_t installs = 0;
  uint64_t resyncs = 0;
  uint64_t gaps_repaired = 0;
  uint64_t restarts_detected = 0;
  uint64_t state_losses = 0;
  uint64_t heartbeats = 0;
  std::string resync_kinds;  // "resyncs{snapshot=..,replay_fold=..,...}"
  std::string line;
};

std::optional<BridgeCounters> ParseCounters(const std::string& line) {
  BridgeCounters c;
  c.line = line;
  const std::pair<const char*, uint64_t*> fields[] = {
      {"rpcs_sent", &c.rpcs_sent},
      {"rpcs_failed", &c.rpcs_failed},
      {"probes", &c.probes},
      {"hashes", &c.hashes},
      {"replays", &c.replays},
      {"replayed_batches", &c.replayed_batches},
      {"snapshots", &c.snapshots},
      {"installs", &c.installs},
      {"resyncs", &c.resyncs},
      {"gaps_repaired", &c.gaps_repaired},
      {"restarts_detected", &c.restarts_detected},
      {"state_losses", &c.state_losses},
      {"heartbeats", &c.heartbeats}};
  for (const auto& [name, value] : fields) {
    const std::optional<std::string> text = LogField(line, name);
    if (!text.has_value() || !absl::SimpleAtoi(*text, value)) {
      ADD_FAILURE() << "no " << name << " in the stats line: " << line;
      return std::nullopt;
    }
  }
  const size_t kinds = line.find("resyncs{");
  if (kinds == std::string::npos) {
    ADD_FAILURE() << "no resyncs{...} in the stats line: " << line;
    return std::nullopt;
  }
  c.resync_kinds = line.substr(kinds, line.find('}', kinds) + 1 - kinds);
  return c;
}

// The next stats line's counters (a line printed after this call).
std::optional<BridgeCounters> NextCounters(ServerProcess& bridge) {
  const std::optional<std::string> line = NextStatsLine(bridge);
  EXPECT_TRUE(line.has_value()) << "no stats line:\n" << bridge.Output();
  if (!line.has_value()) return std::nullopt;
  return ParseCounters(*line);
}

class DurableRestartTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    auto scratch = ScratchDir::Create("kvindexer-bridge-durable-");
    ASSERT_TRUE(scratch.ok()) << scratch.status();
    scratch_ = *std::move(scratch);
    env_ = {{"KV_INDEXER_DATA_DIR", scratch_->Sub("data")},
            {"KV_INDEXER_WAL_SYNC", "always"}};
    indexer_ = IndexerUnderTest::Start(/*port=*/0, env_);
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

  ::testing::AssertionResult HeldBecomes(const std::vector<int64_t>& universe,
                                         const std::set<int64_t>& expected) {
    std::set<int64_t> last;
    if (WaitUntil(
            [&] {
              last = indexer_->HeldOrEmpty(universe);
              return last == expected;
            },
            kEffectBound, 20ms)) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "held " << last.size() << " hashes, expected " << expected.size();
  }

  ::testing::AssertionResult CheckpointBecomes(uint64_t expected) {
    std::optional<uint64_t> last;
    if (WaitUntil(
            [&] {
              last = indexer_->Checkpoint();
              return last == expected;
            },
            kEffectBound, 20ms)) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "checkpoint " << (last ? std::to_string(*last) : "none")
           << ", expected " << expected;
  }

  std::unique_ptr<ScratchDir> scratch_;
  std::map<std::string, std::string> env_;
  std::unique_ptr<IndexerUnderTest> indexer_;
  std::unique_ptr<ServerProcess> bridge_;
};

TEST_P(DurableRestartTest, BridgeResendsNothingAfterTheIndexerRestarts) {
  constexpr uint32_t kSeed = 20261202;
  constexpr int kBatchesBefore = 40;
  constexpr int kBatchesAfter = 20;
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  std::mt19937 rng(kSeed);
  std::vector<int64_t> universe;
  for (int64_t h = 1; h <= 200; ++h) universe.push_back(h);
  std::set<int64_t> model;
  uint64_t hashes_published = 0;
  // Stores and removes only: every event hash becomes one action hash, so
  // the bridge's hash counter can be checked exactly.
  auto next_batch = [&] {
    std::uniform_int_distribution<size_t> pick(0, universe.size() - 1);
    Events events;
    if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) {
      events.push_back(Remove({universe[pick(rng)], universe[pick(rng)]}));
    } else {
      events.push_back(Store(
          {universe[pick(rng)], universe[pick(rng)], universe[pick(rng)]}));
    }
    for (const Ev& ev : events) hashes_published += ev.hashes.size();
    Fold(model, events);
    return Payload(events);
  };

  FakeSglangPublisher publisher;
  bridge_ = StartBridge(*indexer_, publisher, /*with_replay=*/true);
  ASSERT_NE(bridge_, nullptr);
  for (int i = 0; i < kBatchesBefore; ++i) publisher.Publish(next_batch());
  ASSERT_TRUE(HeldBecomes(universe, model));
  ASSERT_TRUE(CheckpointBecomes(kBatchesBefore - 1));

  // The baseline. (While the server is down the bridge's idle probe retries
  // inside its loop and prints no stats line, so it is taken before.)
  const std::optional<BridgeCounters> before = NextCounters(*bridge_);
  ASSERT_TRUE(before.has_value());
  const int port = indexer_->port();
  indexer_->CloseClient();
  indexer_->process().Signal(GetParam());
  ASSERT_TRUE(indexer_->process().WaitForExit(20s).has_value());
  indexer_.reset();

  indexer_ = IndexerUnderTest::Start(port, env_);
  ASSERT_NE(indexer_, nullptr);
  // Complete at once, before the bridge could have sent anything.
  EXPECT_EQ(indexer_->Held(universe), model);
  EXPECT_EQ(indexer_->Checkpoint(),
            std::optional<uint64_t>(kBatchesBefore - 1));

  // The bridge's idle probe reaches the restarted server and finds the
  // checkpoint it left: a successful RPC after a stats line printed since
  // the restart (nothing is published yet, so it can only be a probe).
  const std::optional<BridgeCounters> restarted = NextCounters(*bridge_);
  ASSERT_TRUE(restarted.has_value());
  std::optional<BridgeCounters> probed;
  ASSERT_TRUE(WaitUntil(
      [&] {
        probed = NextCounters(*bridge_);
        return !probed.has_value() || probed->rpcs_sent > restarted->rpcs_sent;
      },
      kEffectBound, 0ms));
  ASSERT_TRUE(probed.has_value());

  const uint64_t hashes_before_restart = hashes_published;
  for (int i = 0; i < kBatchesAfter; ++i) publisher.Publish(next_batch());
  EXPECT_TRUE(HeldBecomes(universe, model));
  EXPECT_TRUE(CheckpointBecomes(kBatchesBefore + kBatchesAfter - 1));
  const std::optional<BridgeCounters> after = NextCounters(*bridge_);
  ASSERT_TRUE(after.has_value());

  SCOPED_TRACE("before: " + before->line + "\nafter:  " + after->line);
  // No recovery of any kind ran.
  EXPECT_EQ(after->replays, before->replays);
  EXPECT_EQ(after->replayed_batches, before->replayed_batches);
  EXPECT_EQ(after->snapshots, before->snapshots);
  EXPECT_EQ(after->installs, before->installs);
  EXPECT_EQ(after->resyncs, before->resyncs);
  EXPECT_EQ(after->resync_kinds, before->resync_kinds);
  EXPECT_EQ(after->gaps_repaired, before->gaps_repaired);
  EXPECT_EQ(after->restarts_detected, before->restarts_detected);
  EXPECT_EQ(after->state_losses, before->state_losses);
  EXPECT_EQ(test_support::LogField(after->line, "degraded"), "0");
  // The applies after the restart are the new batches, each once. Every
  // failed RPC in between was a probe of the stopped server (nothing was
  // published then; a failed attempt counts as a probe but not as sent),
  // and a probe carries no hash.
  EXPECT_EQ(after->hashes - before->hashes,
            hashes_published - hashes_before_restart);
  EXPECT_EQ(after->heartbeats, before->heartbeats);
  const uint64_t probes_ok = (after->probes - before->probes) -
                             (after->rpcs_failed - before->rpcs_failed);
  EXPECT_EQ(after->rpcs_sent - before->rpcs_sent - probes_ok,
            static_cast<uint64_t>(kBatchesAfter));
}

INSTANTIATE_TEST_SUITE_P(Signals, DurableRestartTest,
                         ::testing::Values(SIGTERM, SIGKILL),
                         [](const ::testing::TestParamInfo<int>& param_info) {
                           return param_info.param == SIGTERM ? "Sigterm"
                                                              : "Sigkill";
                         });

}  // namespace
}  // namespace kvindexer::bridge::testing
