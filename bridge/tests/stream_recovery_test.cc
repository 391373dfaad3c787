// The recovery engine against the fakes, case by case
// (docs/bridge-events.md, "Recovery"; the reference scenarios are named by
// their number in "Recovery > Reference scenarios").
#include "bridge/stream_recovery.h"

#include <chrono>
#include <set>
#include <vector>

#include "bridge/tests/recovery_test_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/msgpack_builders.h"

namespace kvindexer::bridge::testing {
namespace stream_recovery_test {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Op = PublisherOp;
using Held = std::set<int64_t>;

constexpr milliseconds kSecond(1000);

RecoveryRig::Setup Replay() { return {.replay = true}; }
RecoveryRig::Setup Snapshot() { return {.replay = true, .snapshot = true}; }
RecoveryRig::Setup LiveOnly() { return {}; }

// Replay on connect: the whole incarnation is buffered, one exact INSTALL.
TEST(StreamRecovery, ReplayOnConnectInstallsOnce) {
  RecoveryRig rig(Replay());
  rig.publisher.PublishBufferOnly({Op::Store({1, 2})});
  rig.publisher.PublishBufferOnly({Op::Store({3})});
  rig.publisher.PublishBufferOnly({Op::Remove({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{2, 3}));
  ASSERT_EQ(rig.server.replaces.size(), 1u);
  EXPECT_EQ(rig.server.replaces[0].applied_seq(), 2u);
  EXPECT_EQ(rig.server.replaces[0].worker_epoch(), "");
  EXPECT_TRUE(rig.engine->exact());
  EXPECT_EQ(rig.engine->server_mode(), StreamRecovery::ServerMode::kGated);
  // Registration (a seed-era empty apply) came first.
  ASSERT_FALSE(rig.server.applies.empty());
  EXPECT_FALSE(rig.server.applies[0].enforce_sequence());
  EXPECT_EQ(rig.server.applies[0].actions_size(), 0);
  EXPECT_EQ(rig.stats.state, "exact");
}

// No replay endpoint and nothing live: nothing is held.
TEST(StreamRecovery, NothingHeldWithoutReplayOrLive) {
  RecoveryRig rig(LiveOnly());
  rig.publisher.PublishBufferOnly({Op::Store({1, 2})});
  ASSERT_TRUE(rig.RunFor(milliseconds(500)).ok());
  EXPECT_THAT(rig.server.Held(kWorker), IsEmpty());
  EXPECT_THAT(rig.server.replaces, IsEmpty());
}

// A gap is filled from the replay buffer.
TEST(StreamRecovery, GapFilledFromReplay) {
  RecoveryRig rig(Replay());
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1}));
  rig.publisher.PublishBufferOnly({Op::Store({2})});
  rig.publisher.PublishBufferOnly({Op::Store({3})});
  rig.publisher.Publish({Op::Store({4})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1, 2, 3, 4}));
  EXPECT_THAT(rig.publisher.replay_starts, ElementsAre(0u, 1u));
  EXPECT_EQ(rig.stats.gaps_repaired, 1u);
  EXPECT_TRUE(rig.engine->exact());
  EXPECT_EQ(rig.server.worker(kWorker)->checkpoint, 3u);
}

// Sequence reset without replay: degraded install at 10, then the restart
// at 0 reinstalls exactly.
TEST(StreamRecovery, SequenceResetWithoutReplay) {
  RecoveryRig rig(LiveOnly());
  for (int i = 0; i < 10; ++i) rig.publisher.PublishBufferOnly({});
  rig.publisher.Publish({Op::Store({1, 2})});
  rig.publisher.Publish({Op::Store({3})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1, 2, 3}));
  ASSERT_EQ(rig.server.replaces.size(), 1u);
  EXPECT_EQ(rig.server.replaces[0].applied_seq(), 10u);
  EXPECT_EQ(rig.engine->degraded_reason(), "no_history");
  EXPECT_EQ(rig.stats.state, "degraded(no_history)");

  rig.publisher.Restart();
  rig.publisher.Publish({Op::Store({7})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{7}));
  EXPECT_EQ(rig.stats.restarts_detected, 1u);
  EXPECT_TRUE(rig.engine->exact());
}

// The before_sync hook runs at the start of every synchronisation: the
// first one and the one after a publisher restart.
TEST(StreamRecovery, BeforeSyncRunsAtEachSynchronisation) {
  int calls = 0;
  RecoveryRig::Setup setup = LiveOnly();
  setup.before_sync = [&calls] {
    ++calls;
    return absl::OkStatus();
  };
  RecoveryRig rig(setup);
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1}));
  EXPECT_EQ(calls, 1);
  rig.publisher.Restart();
  rig.publisher.Publish({Op::Store({7})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{7}));
  EXPECT_EQ(calls, 2);
}

// An error of before_sync ends Run() with it before anything is sent.
TEST(StreamRecovery, BeforeSyncErrorEndsRunBeforeSending) {
  RecoveryRig::Setup setup = Replay();
  setup.before_sync = [] {
    return absl::FailedPreconditionError("/server_info refused: x");
  };
  RecoveryRig rig(setup);
  rig.publisher.PublishBufferOnly({Op::Store({1})});
  const absl::Status status = rig.RunFor(kSecond);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(rig.server.applies, IsEmpty());
  EXPECT_THAT(rig.server.replaces, IsEmpty());
}

// The replay buffer no longer holds the incarnation start: degraded install
// from what it holds.
TEST(StreamRecovery, EvictedStartInstallsDegraded) {
  RecoveryRig rig(Replay());
  rig.publisher.PublishBufferOnly({Op::Store({100})});
  for (int i = 1; i < 5; ++i) rig.publisher.PublishBufferOnly({});
  rig.publisher.PublishBufferOnly({Op::Store({1, 2})});  // 5
  rig.publisher.PublishBufferOnly({Op::Remove({1})});    // 6
  for (int i = 7; i < 10; ++i) rig.publisher.PublishBufferOnly({});
  rig.publisher.EvictBefore(5);
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  ASSERT_EQ(rig.server.replaces.size(), 1u);
  EXPECT_EQ(rig.server.replaces[0].applied_seq(), 9u);
  rig.publisher.Publish({Op::Store({4})});  // 10
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{2, 4}));
  EXPECT_EQ(rig.engine->degraded_reason(), "replay_start_evicted");
}

// Every replay has a hole: degraded install at the live batch.
TEST(StreamRecovery, ReplayHoleFallsBackToLiveInstall) {
  RecoveryRig rig(Replay());
  rig.publisher.replay_omits = {2};
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  rig.publisher.PublishBufferOnly({Op::Store({2})});
  rig.publisher.PublishBufferOnly({Op::Remove({1})});
  rig.publisher.Publish({Op::Store({4})});
  ASSERT_TRUE(rig.RunFor(3 * kSecond).ok());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{4}));
  EXPECT_EQ(rig.server.replaces.back().applied_seq(), 3u);
  EXPECT_EQ(rig.engine->degraded_reason(), "no_history");
}

// Snapshot cycle, then a new epoch triggers a new snapshot.
TEST(StreamRecovery, SnapshotCycleAndEpochChange) {
  RecoveryRig rig(Snapshot());
  rig.publisher.Hold(1);
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  ASSERT_EQ(rig.server.replaces.size(), 1u);
  EXPECT_EQ(rig.server.replaces[0].worker_epoch(), "e0");
  EXPECT_EQ(rig.server.replaces[0].applied_seq(), 0u);  // the barrier
  rig.publisher.Publish({Op::Store({2})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1, 2}));
  EXPECT_EQ(rig.server.worker(kWorker)->checkpoint, 1u);
  EXPECT_TRUE(rig.engine->exact());

  rig.publisher.Restart();
  rig.publisher.Hold(5);
  rig.publisher.Publish({Op::Store({6})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.publisher.snapshots_served, 2);
  EXPECT_EQ(rig.server.Held(kWorker), (Held{5, 6}));
  EXPECT_EQ(rig.server.worker(kWorker)->epoch, "e1");
  EXPECT_EQ(rig.stats.restarts_detected, 1u);
}

// An idle worker's server restarts empty: the idle probe notices within
// about a second and a new snapshot restores the placement.
TEST(StreamRecovery, IdleServerRestartIsRestored) {
  RecoveryRig rig(Snapshot());
  rig.publisher.Hold(1);
  rig.publisher.Publish({Op::Store({2})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1, 2}));
  rig.server.RestartEmpty();
  const auto before = rig.clock.Elapsed();
  ASSERT_TRUE(rig.RunFor(3 * kSecond).ok());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1, 2}));
  EXPECT_EQ(rig.publisher.snapshots_served, 2);
  EXPECT_EQ(rig.stats.state_losses, 1u);
  (void)before;
}

// A batch larger than one request: chunks before the last are seed-era,
// the last is gated; the checkpoint advances once.
TEST(StreamRecovery, OversizedBatchLastChunkGated) {
  RecoveryRig rig(Replay());
  rig.publisher.Publish({});  // seq 0: the install base
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  std::vector<int64_t> hashes;
  for (int64_t h = 1; h <= 40'000; ++h) hashes.push_back(h);
  const size_t before = rig.server.applies.size();
  rig.publisher.Publish({Op::Store(hashes)});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  std::vector<const kv_indexer::v1::ApplyExternalKvBatchRequest*> batch;
  for (size_t i = before; i < rig.server.applies.size(); ++i) {
    if (rig.server.applies[i].seq() == 1)
      batch.push_back(&rig.server.applies[i]);
  }
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_FALSE(batch[0]->enforce_sequence());
  EXPECT_FALSE(batch[1]->enforce_sequence());
  EXPECT_TRUE(batch[2]->enforce_sequence());
  EXPECT_EQ(rig.server.Held(kWorker).size(), 40'000u);
  EXPECT_EQ(rig.server.worker(kWorker)->checkpoint, 1u);
}

// The gated chunk is applied but its answer is lost: the probe shows the
// checkpoint at s, nothing is resent, and the revoked hash stays revoked.
TEST(StreamRecovery, UncertainOutcomeProbesBeforeResend) {
  RecoveryRig rig(Replay());
  rig.publisher.Publish({});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  std::vector<int64_t> hashes;
  for (int64_t h = 1; h <= 16'384; ++h) hashes.push_back(h);
  bool lost = false;
  rig.server.fault_hook = [&lost](FakeGatedServer::Call call) {
    if (call == FakeGatedServer::Call::kGatedApply && !lost) {
      lost = true;
      return FakeGatedServer::Fault::kLoseResponse;
    }
    return FakeGatedServer::Fault::kNone;
  };
  const size_t before = rig.server.applies.size();
  rig.publisher.Publish({Op::Store(hashes), Op::Remove({9})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_TRUE(lost);
  EXPECT_EQ(rig.server.Held(kWorker).count(9), 0u);
  EXPECT_EQ(rig.server.Held(kWorker).size(), 16'383u);
  int sent = 0;
  for (size_t i = before; i < rig.server.applies.size(); ++i) {
    if (rig.server.applies[i].seq() == 1) ++sent;
  }
  EXPECT_EQ(sent, 2);  // the two chunks once; no resend
  EXPECT_EQ(rig.server.worker(kWorker)->checkpoint, 1u);
}

// Transient failures back off without resynchronising or losing batches.
TEST(StreamRecovery, TransientErrorsBackOffAndContinue) {
  RecoveryRig rig(Replay());
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  rig.server.fail_next = 4;
  rig.publisher.Publish({Op::Store({2})});
  rig.publisher.Publish({Op::Store({3})});
  ASSERT_TRUE(rig.RunFor(3 * kSecond).ok());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1, 2, 3}));
  EXPECT_EQ(rig.stats.resyncs, 1u);
  EXPECT_EQ(rig.server.replaces.size(), 1u);
  EXPECT_TRUE(rig.engine->exact());
}

// A server whose apply queue is full answers RESOURCE_EXHAUSTED before it
// changes anything (docs/contract.md, "Limits"): the bridge backs off,
// probes and sends the same batch again, without resynchronising or losing
// a batch.
TEST(StreamRecovery, AFullApplyQueueIsRetriedWithBackoff) {
  RecoveryRig rig(Replay());
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  int refused = 0;
  rig.server.fault_hook = [&refused](FakeGatedServer::Call call) {
    if (call == FakeGatedServer::Call::kGatedApply && refused < 3) {
      ++refused;
      return FakeGatedServer::Fault::kQueueFull;
    }
    return FakeGatedServer::Fault::kNone;
  };
  rig.publisher.Publish({Op::Store({2})});
  rig.publisher.Publish({Op::Store({3})});
  ASSERT_TRUE(rig.RunFor(3 * kSecond).ok());
  EXPECT_EQ(refused, 3);
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1, 2, 3}));
  EXPECT_EQ(rig.server.worker(kWorker)->checkpoint, 2u);  // seqs 0, 1, 2
  EXPECT_EQ(rig.stats.rpc_failures_by_code[static_cast<size_t>(
                absl::StatusCode::kResourceExhausted)],
            3u);
  EXPECT_EQ(rig.stats.resyncs, 1u);
  EXPECT_EQ(rig.stats.state_losses, 0u);
  EXPECT_EQ(rig.server.replaces.size(), 1u);
  EXPECT_TRUE(rig.engine->exact());
}

// The same against a server without the sequence gate: the seed-era apply
// is sent again after the backoff.
TEST(StreamRecovery, AFullApplyQueueIsRetriedOnALegacyServer) {
  RecoveryRig rig(Replay());
  rig.server.gated = false;
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  ASSERT_EQ(rig.engine->server_mode(), StreamRecovery::ServerMode::kLegacy);
  int refused = 0;
  rig.server.fault_hook = [&refused](FakeGatedServer::Call call) {
    if (call == FakeGatedServer::Call::kApply && refused < 2) {
      ++refused;
      return FakeGatedServer::Fault::kQueueFull;
    }
    return FakeGatedServer::Fault::kNone;
  };
  rig.publisher.Publish({Op::Store({2})});
  ASSERT_TRUE(rig.RunFor(3 * kSecond).ok());
  EXPECT_EQ(refused, 2);
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1, 2}));
  EXPECT_EQ(rig.stats.rpc_failures_by_code[static_cast<size_t>(
                absl::StatusCode::kResourceExhausted)],
            2u);
}

// A gated apply refused (the server lost the stream) triggers a resync.
TEST(StreamRecovery, RefusedApplyResynchronises) {
  RecoveryRig rig(Replay());
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  rig.server.RestartEmpty();
  rig.publisher.Publish({Op::Store({2})});
  ASSERT_TRUE(rig.RunFor(2 * kSecond).ok());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1, 2}));
  EXPECT_EQ(rig.stats.state_losses, 1u);
  EXPECT_EQ(rig.server.replaces.size(), 2u);
  EXPECT_TRUE(rig.engine->exact());
}

// The idle probe runs about once a second, with nothing else happening.
TEST(StreamRecovery, IdleProbeEverySecond) {
  RecoveryRig rig(Replay());
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  const int probes = rig.server.probes;
  ASSERT_TRUE(rig.RunFor(5 * kSecond).ok());
  EXPECT_GE(rig.server.probes - probes, 4);
  EXPECT_LE(rig.server.probes - probes, 6);
}

// A bridge restart resumes from the server's checkpoint without an install.
TEST(StreamRecovery, BridgeRestartResumesFromCheckpoint) {
  RecoveryRig rig(LiveOnly());
  rig.publisher.Publish({Op::Store({1})});
  rig.publisher.Publish({Op::Store({2})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.server.replaces.size(), 1u);
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1, 2}));

  // A second engine on the same server and publisher.
  RecoveryIo io;
  io.applier = &rig.server;
  io.live = &rig.queue;
  io.clock = &rig.clock;
  io.random = [] { return uint64_t{0}; };
  BridgeStats stats;
  io.stats = &stats;
  RecoveryOptions options;
  options.header.worker_id = kWorker;
  StreamRecovery second(options, io);
  rig.publisher.Publish({Op::Remove({1})});
  rig.clock.StopAfter(kSecond);
  ASSERT_TRUE(second.Run().ok());
  EXPECT_EQ(rig.server.replaces.size(), 1u);
  EXPECT_EQ(rig.server.Held(kWorker), (Held{2}));
  EXPECT_EQ(second.applied(), 2u);
  // A resume counts as a resync of none of the three install kinds.
  EXPECT_EQ(stats.resyncs, 1u);
  EXPECT_EQ(stats.resyncs_snapshot + stats.resyncs_replay_fold +
                stats.resyncs_degraded,
            0u);
}

// "Recovery > Stats": completed resyncs by kind.
TEST(StreamRecovery, ResyncKindsCounted) {
  {
    RecoveryRig rig(Replay());
    rig.publisher.PublishBufferOnly({Op::Store({1})});
    ASSERT_TRUE(rig.RunFor(kSecond).ok());
    EXPECT_EQ(rig.stats.resyncs, 1u);
    EXPECT_EQ(rig.stats.resyncs_replay_fold, 1u);
    EXPECT_EQ(rig.stats.resyncs_snapshot, 0u);
    EXPECT_EQ(rig.stats.resyncs_degraded, 0u);
    // After a server restart the replay installs exactly again.
    rig.server.RestartEmpty();
    ASSERT_TRUE(rig.RunFor(3 * kSecond).ok());
    EXPECT_EQ(rig.stats.resyncs, 2u);
    EXPECT_EQ(rig.stats.resyncs_replay_fold, 2u);
  }
  {
    RecoveryRig rig(Snapshot());
    rig.publisher.Hold(1);
    ASSERT_TRUE(rig.RunFor(kSecond).ok());
    EXPECT_EQ(rig.server.Held(kWorker), (Held{1}));
    EXPECT_EQ(rig.stats.resyncs, 1u);
    EXPECT_EQ(rig.stats.resyncs_snapshot, 1u);
    EXPECT_EQ(rig.stats.resyncs_replay_fold, 0u);
    EXPECT_EQ(rig.stats.resyncs_degraded, 0u);
  }
  {
    RecoveryRig rig(LiveOnly());
    rig.publisher.PublishBufferOnly({Op::Store({1})});
    rig.publisher.Publish({Op::Store({2})});
    ASSERT_TRUE(rig.RunFor(kSecond).ok());
    EXPECT_EQ(rig.engine->degraded_reason(), "no_history");
    EXPECT_EQ(rig.stats.resyncs, 1u);
    EXPECT_EQ(rig.stats.resyncs_degraded, 1u);
    EXPECT_EQ(rig.stats.resyncs_replay_fold, 0u);
    EXPECT_THAT(rig.stats.FormatLine(),
                ::testing::HasSubstr(
                    "resyncs=1 resyncs{snapshot=0,replay_fold=0,degraded=1}"));
  }
}

// A duplicate answer moves `applied` to the server's checkpoint and later
// batches continue from there.
TEST(StreamRecovery, DuplicateAnswerSkipsCoveredBatches) {
  RecoveryRig rig(Replay());
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  // Batch 1 gets applied, its answer lost, and a transient failure hides
  // the probe once: the bridge still never resends it.
  rig.server.lose_next = 1;
  rig.publisher.Publish({Op::Store({2}), Op::Remove({1})});
  rig.publisher.Publish({Op::Store({3})});
  ASSERT_TRUE(rig.RunFor(2 * kSecond).ok());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{2, 3}));
  EXPECT_EQ(rig.server.worker(kWorker)->checkpoint, 2u);
}

// Overflow of the live buffer is a gap repaired from the replay.
TEST(StreamRecovery, OverflowIsRepairedAsAGap) {
  RecoveryRig rig({.replay = true, .live_capacity = 2});
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  for (int64_t h = 2; h <= 6; ++h) rig.publisher.Publish({Op::Store({h})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  rig.publisher.Publish({Op::Store({7})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.stats.overflows, 1u);
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_TRUE(rig.engine->exact());
}

// Overlap: live batches already covered by the replay are dropped; a
// restart hidden inside the overlap (a different payload at a covered
// number) is still detected.
TEST(StreamRecovery, OverlapDroppedAndHiddenRestartDetected) {
  RecoveryRig rig(Replay());
  rig.publisher.Publish({Op::Store({1})});
  rig.publisher.Publish({Op::Store({2})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.server.replaces.size(), 1u);
  EXPECT_EQ(rig.stats.restarts_detected, 0u);
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1, 2}));

  RecoveryRig rig2(Replay());
  rig2.publisher.PublishBufferOnly({Op::Store({1})});
  rig2.publisher.PublishBufferOnly({Op::Store({2})});
  // Installed from the replay at 1; then the publisher restarts and its
  // new seq 0 and 1 arrive live before anything above 1.
  ASSERT_TRUE(rig2.RunFor(kSecond).ok());
  rig2.publisher.Restart();
  rig2.publisher.Publish({Op::Store({8})});
  rig2.publisher.Publish({Op::Store({9})});
  ASSERT_TRUE(rig2.RunFor(kSecond).ok());
  EXPECT_EQ(rig2.stats.restarts_detected, 1u);
  EXPECT_EQ(rig2.server.Held(kWorker), (Held{8, 9}));
  EXPECT_TRUE(rig2.engine->exact());
}

// Mode S: a same-epoch batch at or below floor is dropped, not a restart.
TEST(StreamRecovery, SnapshotStaleSameEpochDropped) {
  RecoveryRig rig(Snapshot());
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  rig.publisher.Publish({Op::Store({2})});  // seq 2 (barrier took 1)
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  rig.queue.PushBatch(2, PackBatch({}), rig.publisher.Topic());
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.stats.restarts_detected, 0u);
  EXPECT_EQ(rig.publisher.snapshots_served, 1);
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1, 2}));
}

// A reconnect of the SUB socket reruns the initial synchronisation.
TEST(StreamRecovery, ReconnectResynchronises) {
  RecoveryRig rig(Replay());
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  rig.queue.PushMarker(LiveItem::Kind::kDisconnected);
  rig.publisher.PublishBufferOnly({Op::Store({2})});
  rig.queue.PushMarker(LiveItem::Kind::kConnected);
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.stats.resyncs, 2u);
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1, 2}));
  EXPECT_TRUE(rig.engine->exact());
}

// Barrier and action-less batches still advance the checkpoint.
TEST(StreamRecovery, EmptyBatchesAdvanceTheCheckpoint) {
  RecoveryRig rig(Replay());
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  rig.publisher.Publish({});
  rig.publisher.Publish({Op::Store({2}, "EXTERNAL")});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.server.worker(kWorker)->checkpoint, 2u);
  EXPECT_TRUE(rig.engine->exact());
}

// An undecodable batch: modes R/L send an empty gated apply and degrade;
// mode S takes a new snapshot.
TEST(StreamRecovery, UndecodableBatch) {
  RecoveryRig rig(Replay());
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  rig.publisher.PublishGarbage();
  rig.publisher.Publish({Op::Store({2})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.server.worker(kWorker)->checkpoint, 2u);
  EXPECT_EQ(rig.engine->degraded_reason(), "undecodable_batch");
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1, 2}));

  RecoveryRig snap(Snapshot());
  snap.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(snap.RunFor(kSecond).ok());
  snap.publisher.PublishGarbage();
  ASSERT_TRUE(snap.RunFor(kSecond).ok());
  EXPECT_EQ(snap.publisher.snapshots_served, 2);
  EXPECT_TRUE(snap.engine->exact());
}

// A snapshot too large for one request installs its longest fitting
// prefix and degrades.
TEST(StreamRecovery, TruncatedSnapshotDegrades) {
  RecoveryOptions options;
  options.max_request_bytes = 4096;
  RecoveryRig rig(Snapshot(), options);
  for (int64_t h = 1; h <= 2000; ++h) rig.publisher.Hold(h);
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  ASSERT_EQ(rig.server.replaces.size(), 1u);
  EXPECT_LE(rig.server.replaces[0].ByteSizeLong(), 4096u);
  const size_t held = rig.server.Held(kWorker).size();
  EXPECT_GT(held, 400u);
  EXPECT_LT(held, 2000u);
  EXPECT_EQ(*rig.server.Held(kWorker).begin(), 1);
  EXPECT_EQ(*rig.server.Held(kWorker).rbegin(), static_cast<int64_t>(held));
  EXPECT_EQ(rig.engine->degraded_reason(), "snapshot_truncated");
}

// A server without the gate: auto falls back to legacy once, on exits,
// off never tries.
TEST(StreamRecovery, LegacyServerAutoFallsBack) {
  RecoveryRig rig(Replay());
  rig.server.gated = false;
  rig.publisher.PublishBufferOnly({Op::Store({1, 2})});
  rig.publisher.PublishBufferOnly({Op::Store({3})});
  rig.publisher.PublishBufferOnly({Op::Remove({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.engine->server_mode(), StreamRecovery::ServerMode::kLegacy);
  EXPECT_EQ(rig.server.Held(kWorker), (Held{2, 3}));
  EXPECT_EQ(rig.stats.server_mode, "legacy");
  // Live continues; a gap is filled by replay.
  rig.publisher.PublishBufferOnly({Op::Store({4})});
  rig.publisher.Publish({Op::Store({5})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{2, 3, 4, 5}));
  for (const auto& apply : rig.server.applies) {
    EXPECT_FALSE(apply.enforce_sequence());
  }
}

TEST(StreamRecovery, LegacyServerWithGateOnIsFatal) {
  RecoveryRig rig({.replay = true, .gate = SequenceGate::kOn});
  rig.server.gated = false;
  rig.publisher.PublishBufferOnly({Op::Store({1})});
  absl::Status status = rig.RunFor(kSecond);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
}

TEST(StreamRecovery, GateOffNeverCallsReplace) {
  RecoveryRig rig({.gate = SequenceGate::kOff});
  rig.publisher.Publish({Op::Store({1})});
  rig.publisher.Publish({Op::Store({2})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_THAT(rig.server.replaces, IsEmpty());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1, 2}));
  EXPECT_EQ(rig.server.probes, 0);
  // A restart in legacy mode: clear, then forward.
  rig.publisher.Restart();
  rig.publisher.Publish({Op::Store({7})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{7}));
}

// Other permanent errors end the run.
TEST(StreamRecovery, PermanentErrorIsFatal) {
  RecoveryOptions options;
  RecoveryRig rig(Replay(), options);
  rig.server.fault_hook = nullptr;
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  // A tier-0 action cannot come from the decoder; fake it by an empty
  // worker id on a second engine.
  RecoveryIo io;
  io.applier = &rig.server;
  io.live = &rig.queue;
  io.clock = &rig.clock;
  io.random = [] { return uint64_t{0}; };
  BridgeStats stats;
  io.stats = &stats;
  StreamRecovery bad(RecoveryOptions{}, io);
  rig.clock.StopAfter(kSecond);
  EXPECT_EQ(bad.Run().code(), absl::StatusCode::kInvalidArgument);
}

// The jitter before a resynchronisation after a state loss comes from the
// injected RNG.
TEST(StreamRecovery, StateLossWaitsJitterFromRng) {
  RecoveryRig rig(Replay());
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  rig.server.RestartEmpty();
  rig.publisher.Publish({Op::Store({2})});
  // The loss is seen at the apply of seq 1; then 0-500 ms pass before the
  // registration.
  ASSERT_TRUE(rig.RunFor(milliseconds(600)).ok());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1, 2}));
}

}  // namespace
}  // namespace stream_recovery_test
}  // namespace kvindexer::bridge::testing
