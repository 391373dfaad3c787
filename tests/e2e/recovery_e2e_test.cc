// End-to-end recovery (docs/contract.md and docs/bridge-events.md,
// "Recovery"; the scenario numbers are those of docs/bridge-events.md,
// "Recovery > Reference scenarios"): FakeSglangPublisher (PUB, replay and
// snapshot ROUTERs) -> the real kv-indexer-bridge in gated mode -> the real
// kv-indexer-server, checked through MatchExternalKv, MatchExternalKvPrefix
// and a side-effect-free probe of the server's checkpoint.
//
// Covered: R51-R59 and the fault cases F1-F4 (server stopped mid-stream,
// server restarted empty while the worker is idle, publisher restarted while
// the bridge was away, a replay that always misses one batch). R60 (a lost
// apply response) cannot be provoked from outside the processes; the bridge's
// engine tests cover it.
//
// No sleeps as synchronisation: the bridge is live once its subscription has
// reached the fake's XPUB, and effects are awaited in bounded loops. Real
// time passes only where the scenario is timed ("nothing appears within
// 500 ms", "back within 3 s", "the server is down for 3 s").
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/recovery_e2e_harness.h"
#include "tests/support/fake_sglang_publisher.h"
#include "tests/support/server_process.h"

namespace kvindexer::bridge::testing {
namespace {

using ::kvindexer::test_support::WaitUntil;
using ::testing::Contains;
using ::testing::ElementsAre;

std::string Show(const std::set<int64_t>& set) {
  std::string out = "{";
  for (int64_t h : set) out += (out.size() > 1 ? ", " : "") + std::to_string(h);
  return out + "}";
}

std::vector<int64_t> Range(int64_t first, int64_t last) {
  std::vector<int64_t> out;
  for (int64_t h = first; h <= last; ++h) out.push_back(h);
  return out;
}

class RecoveryE2eTest : public BridgeAndIndexerTest {
 protected:
  // Waits until the worker holds exactly `expected` among `universe`.
  ::testing::AssertionResult HeldBecomes(
      const std::vector<int64_t>& universe, const std::set<int64_t>& expected,
      std::chrono::milliseconds timeout = kEffectBound) {
    std::set<int64_t> last;
    if (WaitUntil(
            [&] {
              last = indexer_->HeldOrEmpty(universe);
              return last == expected;
            },
            timeout, 20ms)) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "held " << Show(last) << ", expected " << Show(expected);
  }

  ::testing::AssertionResult CheckpointBecomes(uint64_t expected,
                                               const std::string& epoch = "") {
    std::optional<uint64_t> last;
    if (WaitUntil(
            [&] {
              last = indexer_->Checkpoint(epoch);
              return last == expected;
            },
            kEffectBound, 20ms)) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "checkpoint " << (last ? std::to_string(*last) : "none")
           << ", expected " << expected;
  }

  // Polls for `window` (a timed scenario) and fails if any of `revoked` is
  // held at any moment.
  ::testing::AssertionResult NeverHeld(const std::vector<int64_t>& revoked,
                                       std::chrono::milliseconds window) {
    const auto end = std::chrono::steady_clock::now() + window;
    while (std::chrono::steady_clock::now() < end) {
      const std::set<int64_t> held = indexer_->HeldOrEmpty(revoked);
      if (!held.empty()) {
        return ::testing::AssertionFailure() << "held " << Show(held);
      }
      std::this_thread::sleep_for(10ms);
    }
    return ::testing::AssertionSuccess();
  }

  // The bridge's stats line says whether the index is degraded, once
  // everything observed so far has happened: `degraded=0|1`, or, in a line
  // without it, `state=exact` / `state=degraded(<reason>)`.
  ::testing::AssertionResult StatsSayDegraded(bool expected) {
    const std::optional<std::string> line = NextStatsLine(*bridge_);
    if (!line) return ::testing::AssertionFailure() << "no stats line";
    std::optional<bool> degraded;
    if (auto flag = test_support::LogField(*line, "degraded")) {
      if (*flag == "0" || *flag == "1") degraded = *flag == "1";
    } else if (auto state = test_support::LogField(*line, "state")) {
      if (*state == "exact") degraded = false;
      if (state->rfind("degraded", 0) == 0) degraded = true;
    }
    if (!degraded) {
      return ::testing::AssertionFailure()
             << "the stats line says nothing about degradation: " << *line;
    }
    if (*degraded != expected) {
      return ::testing::AssertionFailure() << "stats line: " << *line;
    }
    return ::testing::AssertionSuccess();
  }

  // How long `condition` took to hold from now (polled every 20 ms, up to
  // kEffectBound, so a late outcome is measured, not just called late).
  static std::optional<std::chrono::milliseconds> TimeUntil(
      const std::function<bool()>& condition) {
    const auto start = std::chrono::steady_clock::now();
    if (!WaitUntil(condition, kEffectBound, 20ms)) return std::nullopt;
    return std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
  }

  // A WARN line names the degraded recovery (its reason follows).
  bool LogsDegradedWarning() {
    return bridge_
        ->WaitForLine(
            [](std::string_view line) {
              return line.find(" warning ") != std::string_view::npos &&
                     line.find("degraded") != std::string_view::npos;
            },
            kEffectBound)
        .has_value();
  }
};

// R51: batches buffered before the bridge starts are replayed on connect;
// one exact install at the last replayed seq.
TEST_F(RecoveryE2eTest, R51ReplayOnConnect) {
  FakeSglangPublisher publisher;
  publisher.BufferOnly(Payload({Store({1, 2})}));
  publisher.BufferOnly(Payload({Store({3}, /*parent=*/2)}));
  publisher.BufferOnly(Payload({Remove({1})}));
  Start(publisher, /*with_replay=*/true);

  EXPECT_TRUE(HeldBecomes({1, 2, 3}, {2, 3}));
  EXPECT_TRUE(CheckpointBecomes(2));
  EXPECT_THAT(publisher.replay_starts(), ElementsAre(0));
  EXPECT_TRUE(StatsSayDegraded(false));
}

// R52: without a replay endpoint a batch the bridge never saw stays unseen.
TEST_F(RecoveryE2eTest, R52NoReplayEndpoint) {
  FakeSglangPublisher publisher;
  publisher.BufferOnly(Payload({Store({1, 2})}));
  Start(publisher, /*with_replay=*/false);
  EXPECT_TRUE(NeverHeld({1, 2}, 500ms));

  // The bridge is alive: the next live batch is installed, degraded (there
  // is no history before seq 1), and 1, 2 stay unknown.
  publisher.Publish(Payload({Store({5})}));
  EXPECT_TRUE(HeldBecomes({1, 2, 5}, {5}));
  EXPECT_TRUE(CheckpointBecomes(1));
  EXPECT_TRUE(publisher.replay_starts().empty());
  EXPECT_TRUE(StatsSayDegraded(true));
}

// R53: a gap in the live stream is filled from the replay buffer.
TEST_F(RecoveryE2eTest, R53GapFilledFromReplay) {
  FakeSglangPublisher publisher;
  Start(publisher, /*with_replay=*/true);
  publisher.Publish(Payload({Store({1})}));
  ASSERT_TRUE(HeldBecomes({1, 2, 3, 4}, {1}));

  publisher.BufferOnly(Payload({Store({2})}));
  publisher.BufferOnly(Payload({Store({3})}));
  publisher.Publish(Payload({Store({4})}));
  EXPECT_TRUE(HeldBecomes({1, 2, 3, 4}, {1, 2, 3, 4}));
  EXPECT_TRUE(CheckpointBecomes(3));
  EXPECT_THAT(publisher.replay_starts(), Contains(1u));
  EXPECT_TRUE(StatsSayDegraded(false));
}

// R54: without replay, a stream that starts at seq 10 is installed degraded;
// a later seq 0 is a publisher restart that replaces everything.
TEST_F(RecoveryE2eTest, R54SequenceReset) {
  FakeSglangPublisher publisher;
  Start(publisher, /*with_replay=*/false);
  publisher.SetNextSeq(10);
  publisher.Publish(Payload({Store({1, 2})}));
  publisher.Publish(Payload({Store({3})}));
  EXPECT_TRUE(HeldBecomes({1, 2, 3, 7}, {1, 2, 3}));
  EXPECT_TRUE(CheckpointBecomes(11));
  EXPECT_TRUE(StatsSayDegraded(true));

  publisher.Restart();
  publisher.Publish(Payload({Store({7})}));
  EXPECT_TRUE(HeldBecomes({1, 2, 3, 7}, {7}));
  EXPECT_TRUE(CheckpointBecomes(0));
}

// R55: the replay buffer no longer holds the incarnation's start: degraded
// install at 9 from FOLD(5..9).
TEST_F(RecoveryE2eTest, R55EvictedStartIsDegraded) {
  FakeSglangPublisher publisher;
  publisher.BufferOnly(Payload({Store({10})}));  // 0: evicted, never again
  publisher.BufferOnly(Payload({Store({11})}));
  publisher.BufferOnly(Payload({Store({12})}));
  publisher.BufferOnly(Payload({Store({13})}));  // 3: removed at 7
  publisher.BufferOnly(Payload({Store({14})}));  // 4: re-reported at 6
  publisher.BufferOnly(Payload({Store({15})}));  // 5
  publisher.BufferOnly(Payload({Store({14, 16})}));
  publisher.BufferOnly(Payload({Remove({13}), Store({17})}));
  publisher.BufferOnly(Payload({Remove({16})}));  // 8: stored in 6
  publisher.BufferOnly(Payload({Store({19})}));   // 9
  publisher.EvictBelow(5);
  ASSERT_THAT(publisher.buffered_seqs(), ElementsAre(5, 6, 7, 8, 9));
  const std::vector<int64_t> universe = Range(10, 20);

  Start(publisher, /*with_replay=*/true);
  EXPECT_TRUE(HeldBecomes(universe, {14, 15, 17, 19}));
  EXPECT_TRUE(CheckpointBecomes(9));
  EXPECT_TRUE(StatsSayDegraded(true));
  EXPECT_TRUE(LogsDegradedWarning());

  publisher.Publish(Payload({Store({20})}));
  EXPECT_TRUE(HeldBecomes(universe, {14, 15, 17, 19, 20}));
  EXPECT_TRUE(CheckpointBecomes(10));
}

// R56: the replay ROUTER always omits seq 2, so no replay is complete:
// degraded install at 3 from the live batch alone; the block removed in the
// missing batch is never held afterwards.
TEST_F(RecoveryE2eTest, R56ReplayHoleIsDegraded) {
  FakeSglangPublisher publisher;
  publisher.OmitFromReplay(2);
  Start(publisher, /*with_replay=*/true);
  publisher.Publish(Payload({Store({1})}));
  ASSERT_TRUE(HeldBecomes({1, 2, 4}, {1}));

  publisher.BufferOnly(Payload({Store({2})}));
  publisher.BufferOnly(Payload({Remove({1})}));
  publisher.Publish(Payload({Store({4})}));
  EXPECT_TRUE(CheckpointBecomes(3));
  EXPECT_TRUE(HeldBecomes({1, 2, 4}, {4}));
  EXPECT_TRUE(NeverHeld({1}, 500ms));
  EXPECT_TRUE(StatsSayDegraded(true));
  EXPECT_TRUE(LogsDegradedWarning());
}

// R59: a 40,000-hash batch needs three RPCs; the checkpoint moves once,
// from 0 to 1, never past it and never back.
TEST_F(RecoveryE2eTest, R59OversizedBatchIsGatedOnItsLastChunk) {
  FakeSglangPublisher publisher;
  Start(publisher, /*with_replay=*/true);
  publisher.Publish(Payload({Store({1})}));
  ASSERT_TRUE(HeldBecomes({1}, {1}));
  ASSERT_TRUE(CheckpointBecomes(0));

  std::vector<int64_t> hashes(40000);
  for (size_t i = 0; i < hashes.size(); ++i) {
    hashes[i] = 1'000'000 + static_cast<int64_t>(i) * 7919;
  }
  publisher.Publish(Payload({Store(hashes)}));
  std::set<uint64_t> checkpoints;
  ASSERT_TRUE(WaitUntil(
      [&] {
        if (auto c = indexer_->Checkpoint()) checkpoints.insert(*c);
        return indexer_->Prefix(hashes) == hashes.size();
      },
      kEffectBound, 20ms));
  EXPECT_EQ(indexer_->HeldOrEmpty(hashes).size(), hashes.size());
  EXPECT_TRUE(CheckpointBecomes(1));
  for (uint64_t c : checkpoints) EXPECT_LE(c, 1u);
  EXPECT_TRUE(bridge_->WaitForOutput(
      "chunk 3/3 applied: 1 actions, 7232 hashes", kEffectBound));
  EXPECT_TRUE(StatsSayDegraded(false));
}

// F1: the server is stopped for 3 s in the middle of a stream and
// restarted empty on the same port; the replay buffer still holds the whole
// incarnation, so the index ends exactly equal to a model of every batch.
class ServerOutageTest : public RecoveryE2eTest,
                         public ::testing::WithParamInterface<int> {};

TEST_P(ServerOutageTest, IndexEqualsModelAfterOutageMidStream) {
  constexpr uint32_t kSeed = 20240610;
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  std::mt19937 rng(kSeed);
  const std::vector<int64_t> universe = Range(1, 80);
  std::set<int64_t> model;
  auto next_batch = [&] {
    Events events;
    const int kind = std::uniform_int_distribution<int>(0, 39)(rng);
    std::uniform_int_distribution<size_t> pick(0, universe.size() - 1);
    if (kind == 0) {
      events.push_back(Clear());
    } else if (kind < 14) {
      events.push_back(Remove({universe[pick(rng)], universe[pick(rng)]}));
    } else {
      events.push_back(Store({universe[pick(rng)], universe[pick(rng)]}));
      if (kind % 3 == 0) events.push_back(Remove({universe[pick(rng)]}));
    }
    Fold(model, events);
    return Payload(events);
  };

  FakeSglangPublisher publisher;
  Start(publisher, /*with_replay=*/true);
  for (int i = 0; i < 50; ++i) publisher.Publish(next_batch());
  ASSERT_TRUE(HeldBecomes(universe, model));

  // More batches in flight, then the server goes away.
  for (int i = 0; i < 10; ++i) publisher.Publish(next_batch());
  const int port = indexer_->port();
  indexer_->process().Signal(GetParam());
  ASSERT_TRUE(indexer_->process().WaitForExit(20s).has_value());
  indexer_.reset();
  // The stream goes on while the server is down (the scenario is timed).
  const auto down_until = std::chrono::steady_clock::now() + 3s;
  while (std::chrono::steady_clock::now() < down_until) {
    publisher.Publish(next_batch());
    std::this_thread::sleep_for(50ms);
  }
  indexer_ = IndexerUnderTest::Start(port);
  ASSERT_NE(indexer_, nullptr);
  for (int i = 0; i < 50; ++i) publisher.Publish(next_batch());

  EXPECT_TRUE(HeldBecomes(universe, model));
  EXPECT_TRUE(CheckpointBecomes(publisher.next_seq() - 1));
  EXPECT_TRUE(StatsSayDegraded(false));
}

INSTANTIATE_TEST_SUITE_P(Signals, ServerOutageTest,
                         ::testing::Values(SIGTERM, SIGKILL),
                         [](const ::testing::TestParamInfo<int>& param_info) {
                           return param_info.param == SIGTERM ? "Sigterm"
                                                              : "Sigkill";
                         });

// F2: the server restarts empty while the worker publishes nothing;
// the bridge's idle probe notices and the blocks are back within 3 s of
// the server being ready.
TEST_F(RecoveryE2eTest, IdleWorkerIsRestoredWithin3sOfServerRestart) {
  FakeSglangPublisher publisher;
  Start(publisher, /*with_replay=*/true);
  publisher.Publish(Payload({Store({1, 2})}));
  publisher.Publish(Payload({Store({3}, 2)}));
  publisher.Publish(Payload({Remove({1})}));
  ASSERT_TRUE(HeldBecomes({1, 2, 3}, {2, 3}));

  const int port = indexer_->port();
  ASSERT_TRUE(indexer_->process().Stop(20s).ok());
  indexer_.reset();
  indexer_ = IndexerUnderTest::Start(port);
  ASSERT_NE(indexer_, nullptr);
  const std::optional<std::chrono::milliseconds> restored = TimeUntil([&] {
    return indexer_->HeldOrEmpty({1, 2, 3}) == std::set<int64_t>{2, 3};
  });
  ASSERT_TRUE(restored.has_value()) << "never restored";
  std::printf("restored %lld ms after the server was ready\n",
              static_cast<long long>(restored->count()));
  EXPECT_LE(*restored, 3s) << "restored " << restored->count()
                           << " ms after the server was ready";
  EXPECT_TRUE(CheckpointBecomes(2));
}

// F3, bridge connected: the publisher goes away, restarts from seq 0
// and publishes while the bridge's SUB is disconnected. The new incarnation
// is longer than the old one, so only the reconnection tells them apart.
TEST_F(RecoveryE2eTest, PublisherRestartWhileBridgeDisconnected) {
  const std::vector<int64_t> universe = {1, 2, 3, 4, 5, 100, 101, 102};
  FakeSglangPublisher publisher;
  Start(publisher, /*with_replay=*/true);
  publisher.Publish(Payload({Store({1, 2, 3, 4, 5})}));
  ASSERT_TRUE(HeldBecomes(universe, {1, 2, 3, 4, 5}));

  publisher.StopLive();
  publisher.Restart();
  publisher.Publish(Payload({Store({100, 101})}));  // buffered only
  publisher.Publish(Payload({Remove({100})}));
  const size_t before = publisher.subscriptions();
  publisher.StartLive();
  ASSERT_TRUE(WaitUntil([&] { return publisher.subscriptions() > before; },
                        kStartBound));
  publisher.Publish(Payload({Store({102})}));

  EXPECT_TRUE(HeldBecomes(universe, {101, 102}));
  EXPECT_TRUE(CheckpointBecomes(2));
  EXPECT_TRUE(NeverHeld({1, 2, 3, 4, 5}, 500ms));
  EXPECT_TRUE(StatsSayDegraded(false));
}

// F3, bridge down: the publisher restarts from seq 0 while no bridge
// runs; the next bridge replaces the old incarnation's blocks.
TEST_F(RecoveryE2eTest, PublisherRestartWhileBridgeDown) {
  const std::vector<int64_t> universe = {1, 2, 3, 4, 5, 100, 101, 102};
  FakeSglangPublisher publisher;
  Start(publisher, /*with_replay=*/true);
  publisher.Publish(Payload({Store({1, 2, 3, 4, 5})}));
  ASSERT_TRUE(HeldBecomes(universe, {1, 2, 3, 4, 5}));
  StopBridge(*bridge_);
  bridge_.reset();

  publisher.StopLive();
  publisher.Restart();
  publisher.Publish(Payload({Store({100, 101})}));
  publisher.Publish(Payload({Remove({100})}));
  publisher.StartLive();
  Start(publisher, /*with_replay=*/true);
  EXPECT_TRUE(HeldBecomes(universe, {101}));
  publisher.Publish(Payload({Store({102})}));
  EXPECT_TRUE(HeldBecomes(universe, {101, 102}));
  EXPECT_TRUE(CheckpointBecomes(2));
  EXPECT_TRUE(StatsSayDegraded(false));
}

// F4: every replay misses the batch that revoked 1 and 4. The bridge
// must fall back to a degraded install and never hold a revoked block again;
// what it holds is a lower bound of what the worker holds.
TEST_F(RecoveryE2eTest, ReplayAlwaysMissingABatchNeverResurrectsRevoked) {
  const std::vector<int64_t> universe = Range(1, 9);
  FakeSglangPublisher publisher;
  publisher.OmitFromReplay(3);
  Start(publisher, /*with_replay=*/true);
  std::set<int64_t> truth;
  auto publish = [&](const Events& events, bool live) {
    Fold(truth, events);
    return live ? publisher.Publish(Payload(events))
                : publisher.BufferOnly(Payload(events));
  };
  publish({Store({1, 2, 3})}, true);
  publish({Store({4})}, true);
  ASSERT_TRUE(HeldBecomes(universe, {1, 2, 3, 4}));

  publish({Store({5})}, false);
  publish({Remove({1, 4})}, false);  // seq 3: never replayed
  publish({Store({6})}, false);
  const uint64_t after_gap = publish({Store({7})}, true);
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto c = indexer_->Checkpoint();
        return c && *c >= after_gap;
      },
      kEffectBound, 20ms));
  EXPECT_TRUE(NeverHeld({1, 4}, 500ms));

  publish({Store({8})}, true);
  publish({Remove({2})}, true);
  EXPECT_TRUE(CheckpointBecomes(publisher.next_seq() - 1));
  const std::set<int64_t> held = indexer_->HeldOrEmpty(universe);
  for (int64_t h : held) EXPECT_TRUE(truth.count(h)) << h << " not held";
  EXPECT_TRUE(held.count(7) && held.count(8)) << Show(held);
  EXPECT_FALSE(held.count(1) || held.count(4) || held.count(2)) << Show(held);
  EXPECT_TRUE(NeverHeld({1, 4}, 300ms));
  EXPECT_TRUE(StatsSayDegraded(true));
}

// The stats line of a recovering bridge shows its mode, state and counters.
TEST_F(RecoveryE2eTest, StatsLineShowsTheStreamState) {
  FakeSglangPublisher publisher;
  publisher.BufferOnly(Payload({Store({1})}));
  Start(publisher, /*with_replay=*/true);
  ASSERT_TRUE(HeldBecomes({1}, {1}));
  const std::optional<std::string> line = NextStatsLine(*bridge_);
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(test_support::LogField(*line, "mode"), "gated/R") << *line;
  EXPECT_EQ(test_support::LogField(*line, "state"), "exact") << *line;
  EXPECT_EQ(test_support::LogField(*line, "degraded"), "0") << *line;
  // The server heard the same from the bridge (the kv-indexer-fidelity
  // metadata; docs/admin-api.md).
  EXPECT_EQ(indexer_->Fidelity(kWorkerId), std::optional<std::string>("exact"));
  EXPECT_EQ(test_support::LogField(*line, "replays"), "1") << *line;
  EXPECT_EQ(test_support::LogField(*line, "replayed_batches"), "1") << *line;
  EXPECT_EQ(test_support::LogField(*line, "installs"), "1") << *line;
}

// Mode S (R57, R58): snapshot-v1 with an epoch-suffixed topic.
class SnapshotModeTest : public RecoveryE2eTest {
 protected:
  static FakeSglangPublisher::Options SnapshotOptions() {
    FakeSglangPublisher::Options options;
    options.topic = "kv";
    options.epoch = "e1";
    options.snapshot = true;
    // The records come from SetSnapshotRecords(), which only snapshot-v1
    // replies carry: an SGLang that speaks v1 only (the bridge falls back).
    options.snapshot_protocols =
        FakeSglangPublisher::SnapshotProtocols::kV1Only;
    options.replay = false;
    return options;
  }

  // R57's first half: snapshot {1}, barrier at 0, live 1 [store 2].
  void InstallFirstSnapshot(FakeSglangPublisher& publisher) {
    publisher.SetSnapshotRecords({{std::nullopt, 1}});
    Start(publisher, /*with_replay=*/false, {{"SGLANG_KV_EVENT_TOPIC", "kv"}});
    ASSERT_TRUE(HeldBecomes({1, 2}, {1}));
    ASSERT_GE(publisher.snapshot_requests(), 1u);
    ASSERT_TRUE(CheckpointBecomes(publisher.next_seq() - 1, "e1"));
    publisher.Publish(Payload({Store({2}, 1)}));
    publisher.SetSnapshotRecords({{std::nullopt, 1}, {1, 2}});
    ASSERT_TRUE(WaitUntil(
        [&] {
          return indexer_->Prefix({1, 2}) == 2;
        },
        kEffectBound));
  }
};

TEST_F(SnapshotModeTest, R57SnapshotCycleAndEpochChange) {
  FakeSglangPublisher publisher(SnapshotOptions());
  InstallFirstSnapshot(publisher);
  const size_t requests = publisher.snapshot_requests();
  EXPECT_TRUE(CheckpointBecomes(publisher.next_seq() - 1, "e1"));

  // The worker restarts under a new epoch: a new snapshot replaces all.
  publisher.Restart("e2");
  publisher.SetSnapshotRecords({{std::nullopt, 5}});
  publisher.Publish(Payload({Store({5})}));
  EXPECT_TRUE(WaitUntil(
      [&] { return publisher.snapshot_requests() > requests; }, kEffectBound));
  EXPECT_TRUE(HeldBecomes({1, 2, 5}, {5}));
  EXPECT_EQ(indexer_->Prefix({1, 2}), 0u);
  EXPECT_TRUE(CheckpointBecomes(publisher.next_seq() - 1, "e2"));
  EXPECT_FALSE(indexer_->Checkpoint("e1").has_value());
}

TEST_F(SnapshotModeTest, R58IdleServerRestartTakesANewSnapshot) {
  FakeSglangPublisher publisher(SnapshotOptions());
  InstallFirstSnapshot(publisher);
  const size_t requests = publisher.snapshot_requests();

  const int port = indexer_->port();
  ASSERT_TRUE(indexer_->process().Stop(20s).ok());
  indexer_.reset();
  indexer_ = IndexerUnderTest::Start(port);
  ASSERT_NE(indexer_, nullptr);
  const std::optional<std::chrono::milliseconds> restored = TimeUntil([&] {
    return publisher.snapshot_requests() > requests &&
           indexer_->Prefix({1, 2}) == 2;
  });
  ASSERT_TRUE(restored.has_value()) << "never restored";
  std::printf("restored %lld ms after the server was ready\n",
              static_cast<long long>(restored->count()));
  EXPECT_LE(*restored, 3s) << "restored " << restored->count()
                           << " ms after the server was ready";
}

}  // namespace
}  // namespace kvindexer::bridge::testing
