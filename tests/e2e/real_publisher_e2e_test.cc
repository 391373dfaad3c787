// End-to-end recovery against a publisher that behaves as SGLang's does
// under load (docs/bridge-events.md, "Replay and snapshot channels"): its
// replay ROUTER drops whatever does not fit a 64-message queue, its PUB
// socket drops batches a subscriber does not read beyond its high-water
// mark. FakeSglangPublisher -> the real kv-indexer-bridge -> the real
// kv-indexer-server; the index must end exact, and the bridge's stats must
// show that the replies were paged (so the test cannot pass without drops).
//
// No sleeps as synchronisation: effects are awaited in bounded loops.
#include <signal.h>

#include <chrono>
#include <cstdint>
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
#include "tests/support/server_process.h"

namespace kvindexer::bridge::testing {
namespace {

using ::kvindexer::test_support::WaitUntil;

// Long recoveries (thousands of batches, paged) on a busy machine.
constexpr std::chrono::milliseconds kRecoveryBound = 90s;

// A worker's history: batch i stores `width` hashes of a ring of `ring`
// and removes a few stored earlier, so that the final placement depends on
// every batch and on their order.
class Workload {
 public:
  Workload(int64_t ring, int64_t width) : ring_(ring), width_(width) {}

  Events Next() {
    Events events;
    std::vector<int64_t> stored;
    for (int64_t k = 0; k < width_; ++k) {
      stored.push_back((next_ * width_ + k) % ring_ + 1);
    }
    events.push_back(Store(std::move(stored)));
    std::vector<int64_t> removed;
    for (int64_t k = 0; k < 3; ++k) {
      removed.push_back((next_ * 7919 + k * 104'729) % ring_ + 1);
    }
    events.push_back(Remove(std::move(removed)));
    ++next_;
    Fold(held_, events);
    return events;
  }

  const std::set<int64_t>& held() const { return held_; }
  std::vector<int64_t> universe() const {
    std::vector<int64_t> all;
    for (int64_t h = 1; h <= ring_; ++h) all.push_back(h);
    return all;
  }

 private:
  const int64_t ring_;
  const int64_t width_;
  int64_t next_ = 0;
  std::set<int64_t> held_;
};

uint64_t StatField(const std::string& line, const std::string& name) {
  std::optional<std::string> value = test_support::LogField(line, name);
  return value ? std::stoull(*value) : 0;
}

class RealPublisherE2eTest : public BridgeAndIndexerTest {
 protected:
  void TearDown() override {
    if (bridge_ && stopped_) ::kill(bridge_->pid(), SIGCONT);
    BridgeAndIndexerTest::TearDown();
  }

  void Pause() {
    ASSERT_EQ(::kill(bridge_->pid(), SIGSTOP), 0);
    stopped_ = true;
  }
  void Resume() {
    ASSERT_EQ(::kill(bridge_->pid(), SIGCONT), 0);
    stopped_ = false;
  }

  ::testing::AssertionResult HeldBecomes(const Workload& workload) {
    const std::vector<int64_t> universe = workload.universe();
    std::set<int64_t> last;
    if (WaitUntil(
            [&] {
              last = indexer_->HeldOrEmpty(universe);
              return last == workload.held();
            },
            kRecoveryBound, 50ms)) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "the index holds " << last.size() << " of the worker's blocks ("
           << workload.held().size() << " expected, the sets differ)";
  }

  // After an outage the PUB socket may drop the last batches too, and then
  // nothing tells the bridge about them until the worker publishes again
  // (as a serving worker does all the time). Publishes one batch at a time
  // until the server's checkpoint reaches the newest.
  ::testing::AssertionResult PublishUntilCaughtUp(
      FakeSglangPublisher& publisher, Workload& workload,
      const std::string& epoch) {
    for (int attempt = 0; attempt < 60; ++attempt) {
      const uint64_t seq = publisher.Publish(Payload(workload.Next()));
      if (WaitUntil([&] { return indexer_->Checkpoint(epoch) == seq; }, 1500ms,
                    20ms)) {
        return ::testing::AssertionSuccess();
      }
    }
    return ::testing::AssertionFailure()
           << "the server's checkpoint never reached the newest batch";
  }

  // The first stats line after the index became exact.
  std::string Stats() {
    std::optional<std::string> line = NextStatsLine(*bridge_);
    EXPECT_TRUE(line.has_value()) << "no stats line";
    return line.value_or("");
  }

  bool stopped_ = false;
};

// A bridge started after 5,000 batches asks for replay from 0: SGLang's
// replay socket delivers a few dozen replies and drops most of the rest
// (the END marker too); the bridge pages through them and installs the
// whole incarnation, exact.
TEST_F(RealPublisherE2eTest, ModeRStartedAfter5000BatchesEndsExact) {
  FakeSglangPublisher publisher;
  Workload workload(/*ring=*/6'000, /*width=*/4);
  for (int i = 0; i < 5'000; ++i)
    publisher.BufferOnly(Payload(workload.Next()));
  Start(publisher, /*with_replay=*/true);
  ASSERT_TRUE(HeldBecomes(workload));
  EXPECT_EQ(indexer_->Checkpoint(""), std::optional<uint64_t>(4'999));
  EXPECT_EQ(indexer_->Fidelity(kWorkerId), std::optional<std::string>("exact"));
  const std::string line = Stats();
  EXPECT_EQ(test_support::LogField(line, "state"), "exact") << line;
  EXPECT_EQ(test_support::LogField(line, "mode"), "gated/R") << line;
  // The replies were dropped and asked for again: more than one request.
  EXPECT_GT(StatField(line, "replay_pages"), 1u) << line;
  EXPECT_GT(publisher.replay_starts().size(), 1u);
  EXPECT_EQ(StatField(line, "replayed_batches"), 5'000u) << line;
  EXPECT_EQ(StatField(line, "rpcs_failed"), 0u) << line;
}

// The bridge is stopped (SIGSTOP) while the worker publishes far more than
// the PUB socket's high-water mark and the socket buffers hold: batches are
// dropped on the live stream. Resumed, the bridge finds the gap, pages the
// replay and is exact again without a full resynchronisation.
TEST_F(RealPublisherE2eTest, ModeRBridgeStoppedWhileThePublisherOutrunsIt) {
  FakeSglangPublisher::Options options;
  options.pub_hwm = 100;
  FakeSglangPublisher publisher(options);
  // About 3 KB a batch: 5,000 batches are far more than the loopback
  // socket buffers and the 100-message PUB queue can hold.
  Workload workload(/*ring=*/20'000, /*width=*/300);
  Start(publisher, /*with_replay=*/true);
  for (int i = 0; i < 10; ++i) publisher.Publish(Payload(workload.Next()));
  ASSERT_TRUE(HeldBecomes(workload));

  Pause();
  for (int i = 0; i < 5'000; ++i) publisher.Publish(Payload(workload.Next()));
  Resume();
  ASSERT_TRUE(PublishUntilCaughtUp(publisher, workload, ""));
  ASSERT_TRUE(HeldBecomes(workload));
  const std::string line = Stats();
  EXPECT_EQ(test_support::LogField(line, "state"), "exact") << line;
  EXPECT_GE(StatField(line, "seq_gaps"), 1u) << line;
  EXPECT_GE(StatField(line, "gaps_repaired"), 1u) << line;
  EXPECT_GT(StatField(line, "replay_pages"), StatField(line, "replays"))
      << line;
}

// A resynchronisation that cannot finish: after a reconnect the worker has
// removed blocks in a batch the publisher never serves (every replay has a
// hole there), and it publishes nothing more live. Within
// KV_INDEXER_RESYNC_CLEAR_AFTER_MS the index keeps the last synchronised
// placement; after it the worker's blocks are gone from the index, which
// says why, until a resync succeeds.
TEST_F(RealPublisherE2eTest, AResyncThatCannotFinishClearsTheWorker) {
  const std::vector<int64_t> universe = {1, 2, 3, 4};
  FakeSglangPublisher publisher;
  Start(publisher, /*with_replay=*/true,
        {{"KV_INDEXER_RESYNC_CLEAR_AFTER_MS", "3000"}});
  publisher.Publish(Payload({Store({1, 2, 3})}));
  ASSERT_TRUE(WaitUntil(
      [&] {
        return indexer_->HeldOrEmpty(universe) == std::set<int64_t>{1, 2, 3};
      },
      kRecoveryBound, 20ms));

  publisher.StopLive();
  const uint64_t removal = publisher.Publish(Payload({Remove({1, 2})}));
  publisher.OmitFromReplay(removal);
  // A batch after the hole, so that the hole shows in every replay.
  publisher.Publish(Payload({Store({4})}));
  const size_t before = publisher.subscriptions();
  publisher.StartLive();
  ASSERT_TRUE(WaitUntil([&] { return publisher.subscriptions() > before; },
                        kStartBound));
  const auto reconnected = std::chrono::steady_clock::now();
  // The worker holds {3, 4}; the index must come down to a subset of it.
  ASSERT_TRUE(WaitUntil([&] { return indexer_->HeldOrEmpty(universe).empty(); },
                        kRecoveryBound, 20ms));
  // Not before the bound (with some slack for the reconnect's detection).
  EXPECT_GE(std::chrono::steady_clock::now() - reconnected, 2500ms);
  EXPECT_EQ(indexer_->Fidelity(kWorkerId),
            std::optional<std::string>("degraded; resync_failing"));
  ASSERT_TRUE(bridge_
                  ->WaitForLine(
                      [](std::string_view line) {
                        return line.find("resync_failing") !=
                               std::string_view::npos;
                      },
                      kRecoveryBound)
                  .has_value());

  // The publisher serves the batch again: the next attempt is exact.
  publisher.ClearReplayOmissions();
  ASSERT_TRUE(WaitUntil(
      [&] {
        return indexer_->HeldOrEmpty(universe) == std::set<int64_t>{3, 4} &&
               indexer_->Fidelity(kWorkerId) ==
                   std::optional<std::string>("exact");
      },
      kRecoveryBound, 20ms));
}

// Mode S, with and without a replay endpoint: the same outage ends exact,
// through a paged replay of the gap or through a new snapshot.
class SnapshotOutageTest : public RealPublisherE2eTest,
                           public ::testing::WithParamInterface<bool> {};

TEST_P(SnapshotOutageTest, ModeSBridgeStoppedWhileThePublisherOutrunsIt) {
  const bool with_replay = GetParam();
  FakeSglangPublisher::Options options;
  options.topic = "kv";
  options.epoch = "e1";
  options.snapshot = true;
  options.replay = with_replay;
  options.pub_hwm = 100;
  FakeSglangPublisher publisher(options);
  Workload workload(/*ring=*/20'000, /*width=*/300);
  Start(publisher, with_replay, {{"SGLANG_KV_EVENT_TOPIC", "kv"}});
  for (int i = 0; i < 10; ++i) publisher.Publish(Payload(workload.Next()));
  ASSERT_TRUE(HeldBecomes(workload));

  Pause();
  for (int i = 0; i < 5'000; ++i) publisher.Publish(Payload(workload.Next()));
  Resume();
  ASSERT_TRUE(PublishUntilCaughtUp(publisher, workload, "e1"));
  ASSERT_TRUE(HeldBecomes(workload));
  const std::string line = Stats();
  EXPECT_EQ(test_support::LogField(line, "state"), "exact") << line;
  EXPECT_EQ(test_support::LogField(line, "mode"), "gated/S") << line;
  EXPECT_GE(StatField(line, "seq_gaps"), 1u) << line;
  if (with_replay) {
    EXPECT_GE(StatField(line, "gaps_repaired"), 1u) << line;
    EXPECT_GT(StatField(line, "replay_pages"), StatField(line, "replays"))
        << line;
  } else {
    EXPECT_GE(StatField(line, "snapshots"), 2u) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(WithAndWithoutReplay, SnapshotOutageTest,
                         ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param_info) {
                           return param_info.param ? "WithReplay"
                                                   : "SnapshotOnly";
                         });

}  // namespace
}  // namespace kvindexer::bridge::testing
