// The replay bound at work in a DurableStore: with the checkpoint build
// held back (its writes block), writes stop at the bound instead of growing
// the log a restart replays, go on as soon as the build is in place, and a
// restart replays no more than the bound.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <string>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "durable/durable_store.h"
#include "gtest/gtest.h"
#include "tests/support/checkpoint_write_gate.h"
#include "tests/support/durable_store_fixture.h"
#include "tests/support/wait_until.h"

namespace kvindexer::durable {
namespace {

using test_support::WaitUntil;

constexpr uint64_t kCheckpointBytes = 2048;
constexpr uint64_t kMaxReplayBytes = 2 * kCheckpointBytes;

class ReplayBoundStoreTest : public DurableStoreTest {
 protected:
  DurableOptions Bounded() {
    DurableOptions options = Options(kCheckpointBytes);
    options.max_replay_bytes = kMaxReplayBytes;
    options.io = &io_;
    return options;
  }
  // Starts bounded with the workload applied and its checkpoints in place,
  // then closes the gate: the next build stops at its first write.
  void StartWithBuildsHeld() {
    StartOk(Bounded());
    Workload();
    store().WaitForCheckpoints();
    io_.Close();
  }
  // The store goes first, with the gate open: it may still write through
  // io_ while it closes.
  void TearDown() override {
    io_.Open();
    Crash();
  }
  CheckpointWriteGate io_;
};

TEST_F(ReplayBoundStoreTest, WritesWaitForTheBuildAtTheBound) {
  StartWithBuildsHeld();

  // Applies go on until the next write would pass the bound while the
  // build cannot finish.
  std::atomic<uint64_t> next_seq{13};
  std::atomic<bool> done{false};
  auto writer = std::async(std::launch::async, [&] {
    for (int i = 0; i < 400; ++i) ApplyW1(next_seq++);
    done = true;
  });
  // Destroyed before `writer`: the gate opens before the writer is awaited.
  const absl::Cleanup open_on_exit = [this] { io_.Open(); };
  ASSERT_TRUE(WaitUntil([&] { return store().figures().replay.stalled; },
                        std::chrono::seconds(60),
                        std::chrono::milliseconds(1)));
  // The build reaches the gate (it may come after the write stalled).
  ASSERT_TRUE(WaitUntil([&] { return io_.Holding(); }, std::chrono::seconds(60),
                        std::chrono::milliseconds(1)));
  const DurableFigures held = store().figures();
  EXPECT_FALSE(done.load());
  EXPECT_LE(held.replay.tail_bytes, kMaxReplayBytes);
  EXPECT_GT(held.replay.tail_bytes, kCheckpointBytes);
  EXPECT_EQ(held.replay.max_bytes, kMaxReplayBytes);
  EXPECT_EQ(held.replay.stalls, 1u);
  EXPECT_TRUE(held.checkpoint_in_progress);

  io_.Open();
  writer.get();
  EXPECT_TRUE(done.load());
  store().WaitForCheckpoints();
  const DurableFigures after = store().figures();
  EXPECT_GE(after.replay.stalls, 1u);
  EXPECT_FALSE(after.replay.stalled);
  EXPECT_LE(after.replay.tail_bytes, kMaxReplayBytes);
  EXPECT_EQ(after.checkpoint_failures.of(CheckpointFailure::kBuild), 0u);

  const std::string before = State();
  const uint64_t tail = after.replay.tail_bytes;
  Crash();
  StartOk(Options(kCheckpointBytes));
  EXPECT_EQ(State(), before);
  EXPECT_EQ(store().recovery().log_bytes, tail);
  EXPECT_LE(store().recovery().log_bytes, kMaxReplayBytes);
  EXPECT_EQ(Probe("w1", "e1"), next_seq.load() - 1);
}

TEST_F(ReplayBoundStoreTest, TheTailStaysWithinTheBoundUnderSustainedWrites) {
  StartOk(Bounded());
  Workload();
  uint64_t seq = 13;
  uint64_t most = 0;
  for (int i = 0; i < 600; ++i) {
    ApplyW1(seq++);
    most = std::max(most, store().figures().replay.tail_bytes);
  }
  EXPECT_LE(most, kMaxReplayBytes);
  EXPECT_GT(store().checkpoints_written(), 2u);
  const std::string before = State();
  Crash();  // a checkpoint may be in progress: the crash abandons it
  StartOk(Options(kCheckpointBytes));
  EXPECT_LE(store().recovery().log_bytes, kMaxReplayBytes);
  EXPECT_EQ(State(), before);
}

TEST_F(ReplayBoundStoreTest, ClosingTheStoreReleasesAWaitingWrite) {
  StartWithBuildsHeld();
  std::atomic<bool> done{false};
  auto writer = std::async(std::launch::async, [&] {
    for (uint64_t seq = 13; seq < 400; ++seq) {
      // Once the store is closed, applies are refused (the log is closed).
      const absl::Status s = Apply(
          Batch("w1", "addr-1")
              .Gated("e1", seq)
              .Report(kTierHbm, Range(static_cast<int64_t>(1000 + seq), 8)));
      EXPECT_TRUE(s.ok() || absl::IsUnavailable(s)) << s;
    }
    done = true;
  });
  // Destroyed before `writer`: the gate opens before the writer is awaited.
  const absl::Cleanup open_on_exit = [this] { io_.Open(); };
  ASSERT_TRUE(WaitUntil([&] { return store().figures().replay.stalled; },
                        std::chrono::seconds(60),
                        std::chrono::milliseconds(1)));
  ASSERT_TRUE(WaitUntil([&] { return io_.Holding(); }, std::chrono::seconds(60),
                        std::chrono::milliseconds(1)));
  // The store is closed while the write waits and the build is held: the
  // write is released and the closing takes the Indexer's mutation mutex
  // from it, so every later apply is answered, all before the build could
  // end.
  std::thread closer([&] { node_->store.reset(); });
  EXPECT_TRUE(WaitUntil([&] { return done.load(); }, std::chrono::seconds(60),
                        std::chrono::milliseconds(1)));
  io_.Open();
  closer.join();
  writer.get();
}

// Shutdown begins: a write waiting at the cap goes on at once, and no later
// one waits, though the build is still held.
TEST_F(ReplayBoundStoreTest, ReleasingWaitingWritesEndsTheWaitForGood) {
  StartWithBuildsHeld();
  std::atomic<bool> done{false};
  auto writer = std::async(std::launch::async, [&] {
    for (uint64_t seq = 13; seq < 200; ++seq) ApplyW1(seq);
    done = true;
  });
  // Destroyed before `writer`: the gate opens before the writer is awaited.
  const absl::Cleanup open_on_exit = [this] { io_.Open(); };
  ASSERT_TRUE(WaitUntil([&] { return store().figures().replay.stalled; },
                        std::chrono::seconds(60),
                        std::chrono::milliseconds(1)));
  store().ReleaseWaitingWrites();
  // All of them, with the gate still shut: the build has not ended.
  EXPECT_TRUE(WaitUntil([&] { return done.load(); }, std::chrono::seconds(60),
                        std::chrono::milliseconds(1)));
  EXPECT_FALSE(store().figures().replay.stalled);
  EXPECT_TRUE(store().figures().checkpoint_in_progress);
}

TEST_F(ReplayBoundStoreTest, RecoveryCountsTheFilesBeforeTheContinuedOne) {
  // A start that replays more than a checkpoint's worth starts a build at
  // once; the files it covers are part of the tail until it is in place.
  StartOk(Options());
  Workload();
  uint64_t seq = 13;
  for (int i = 0; i < 60; ++i) ApplyW1(seq++);
  Crash();
  io_.Close();
  StartOk(Bounded());
  const uint64_t replayed = store().recovery().log_bytes;
  ASSERT_GT(replayed, kCheckpointBytes);
  EXPECT_EQ(store().figures().replay.tail_bytes, replayed);
  io_.Open();
  store().WaitForCheckpoints();
  EXPECT_EQ(store().figures().replay.tail_bytes, 0u);
}

}  // namespace
}  // namespace kvindexer::durable
