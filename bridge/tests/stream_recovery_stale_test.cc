// The recovery engine against the fakes when resynchronisation cannot
// finish (docs/bridge-events.md, "Recovery > A resync that cannot finish"):
// the placement the server kept from the last synchronised state is cleared
// once attempts have failed for KV_INDEXER_RESYNC_CLEAR_AFTER_MS, and not
// before; the next successful synchronisation installs in full.
#include <chrono>
#include <set>

#include "bridge/stream_recovery.h"
#include "bridge/tests/recovery_test_fixture.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge::testing {
// Named: the unity build compiles this file with the other engine tests.
namespace stale_test {

using std::chrono::milliseconds;
using Op = PublisherOp;
using Held = std::set<int64_t>;

constexpr milliseconds kSecond(1000);

RecoveryOptions ClearAfter(milliseconds after) {
  RecoveryOptions options;
  options.resync_clear_after = after;
  return options;
}

// A reconnect asks for a resync; the worker meanwhile removed block 1 in a
// batch the bridge never saw, and every replay fails (as against SGLang's
// replay socket before paging). The index must not keep block 1 for ever.
TEST(StreamRecoveryStale, ModeRClearsTheWorkerOnceResyncHasFailedLongEnough) {
  RecoveryRig rig({.replay = true}, ClearAfter(10 * kSecond));
  rig.publisher.Publish({Op::Store({1, 2})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  ASSERT_TRUE(rig.engine->exact());
  ASSERT_EQ(rig.server.Held(kWorker), (Held{1, 2}));

  rig.queue.PushMarker(LiveItem::Kind::kDisconnected);
  rig.queue.PushMarker(LiveItem::Kind::kConnected);
  rig.publisher.PublishBufferOnly({Op::Remove({1})});
  rig.publisher.replay_fail_next = 1'000'000;
  ASSERT_TRUE(rig.RunFor(5 * kSecond).ok());
  EXPECT_FALSE(rig.engine->synchronised());
  // Within the bound the last synchronised placement stays.
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1, 2}));
  EXPECT_EQ(rig.stats.stale_clears, 0u);

  ASSERT_TRUE(rig.RunFor(7 * kSecond).ok());
  EXPECT_FALSE(rig.engine->synchronised());
  EXPECT_EQ(rig.server.Held(kWorker), Held{});
  EXPECT_EQ(rig.stats.stale_clears, 1u);
  EXPECT_EQ(rig.engine->degraded_reason(), "resync_failing");
  EXPECT_EQ(rig.stats.state, "syncing");
  // Under an epoch no publisher uses: a bridge that restarts now finds no
  // checkpoint to resume from (a probe under "" is refused).
  ASSERT_FALSE(rig.server.replaces.empty());
  EXPECT_EQ(rig.server.replaces.back().worker_epoch(),
            "kvindexer-resync-failing");
  EXPECT_EQ(rig.server.replaces.back().hashes_by_tier_size(), 0);

  // Once only per unsynchronised period.
  const size_t replaces = rig.server.replaces.size();
  ASSERT_TRUE(rig.RunFor(20 * kSecond).ok());
  EXPECT_EQ(rig.stats.stale_clears, 1u);
  EXPECT_EQ(rig.server.replaces.size(), replaces);

  // The replay works again: a full install, exact, no resume from the
  // cleared checkpoint.
  rig.publisher.replay_fail_next = 0;
  ASSERT_TRUE(rig.RunFor(15 * kSecond).ok());
  EXPECT_TRUE(rig.engine->exact());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{2}));
  EXPECT_EQ(rig.server.Held(kWorker), rig.publisher.cached_hashes());
}

// Mode S: snapshot fetches keep failing after a publisher restart was
// missed across a reconnect.
TEST(StreamRecoveryStale, ModeSClearsTheWorkerWhenSnapshotsKeepFailing) {
  RecoveryRig rig({.snapshot = true}, ClearAfter(3 * kSecond));
  rig.publisher.Publish({Op::Store({1, 2})});
  ASSERT_TRUE(rig.RunFor(2 * kSecond).ok());
  ASSERT_TRUE(rig.engine->exact());
  ASSERT_EQ(rig.server.Held(kWorker), (Held{1, 2}));

  rig.queue.PushMarker(LiveItem::Kind::kDisconnected);
  rig.queue.PushMarker(LiveItem::Kind::kConnected);
  rig.publisher.Restart();
  rig.publisher.snapshot_fail_next = 1'000'000;
  ASSERT_TRUE(rig.RunFor(10 * kSecond).ok());
  EXPECT_EQ(rig.server.Held(kWorker), Held{});
  EXPECT_EQ(rig.stats.stale_clears, 1u);

  rig.publisher.snapshot_fail_next = 0;
  rig.publisher.Publish({Op::Store({7})});
  ASSERT_TRUE(rig.RunFor(15 * kSecond).ok());
  EXPECT_TRUE(rig.engine->exact());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{7}));
}

// 0 clears at the first failed attempt; a resync that succeeds at once
// never clears.
TEST(StreamRecoveryStale, ZeroClearsAtTheFirstFailureAndSuccessNeverClears) {
  RecoveryRig rig({.replay = true}, ClearAfter(milliseconds(0)));
  rig.publisher.Publish({Op::Store({1, 2})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  ASSERT_TRUE(rig.engine->exact());
  rig.queue.PushMarker(LiveItem::Kind::kDisconnected);
  rig.queue.PushMarker(LiveItem::Kind::kConnected);
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_TRUE(rig.engine->exact());
  EXPECT_EQ(rig.stats.stale_clears, 0u);

  rig.queue.PushMarker(LiveItem::Kind::kDisconnected);
  rig.queue.PushMarker(LiveItem::Kind::kConnected);
  rig.publisher.replay_fail_next = 1'000'000;
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_EQ(rig.stats.stale_clears, 1u);
  EXPECT_EQ(rig.server.Held(kWorker), Held{});
}

// A healthy gated run counts every live batch and no failed RPC: the
// first batch, installed by a fold, is a batch too, and the first probe's
// "no checkpoint" answer is not a failure.
TEST(StreamRecoveryStale, AHealthyRunCountsEveryBatchAndNoFailedRpc) {
  RecoveryRig rig({});
  for (int64_t h = 1; h <= 20; ++h) rig.publisher.Publish({Op::Store({h})});
  ASSERT_TRUE(rig.RunFor(2 * kSecond).ok());
  ASSERT_TRUE(rig.engine->exact());
  EXPECT_EQ(rig.stats.messages_received, 20u);
  EXPECT_EQ(rig.stats.batches_received, 20u);
  EXPECT_EQ(rig.stats.events_received, 20u);
  EXPECT_EQ(rig.stats.rpcs_failed, 0u);
  EXPECT_GE(rig.stats.probes, 1u);
}

}  // namespace stale_test
}  // namespace kvindexer::bridge::testing
