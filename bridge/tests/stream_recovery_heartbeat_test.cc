// Worker liveness in the recovery engine (docs/bridge-events.md, "Recovery >
// Worker liveness"): heartbeats at max(TTL / 3, 100 ms) while the worker
// probe succeeds, none while it fails or with TTL 0, the TTL carried only by
// heartbeats, a refused heartbeat handled as a state loss, the probe never
// blocking the engine. Against FakeGatedServer, FakeWorkerProbe and the
// manual clock; the last tests use the real TCP probe on loopback.
#include <chrono>
#include <set>
#include <thread>

#include "bridge/stream_recovery.h"
#include "bridge/tests/recovery_test_fixture.h"
#include "bridge/worker_probe.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fake_worker_port.h"

namespace kvindexer::bridge::testing {
namespace {

using std::chrono::milliseconds;
using Op = PublisherOp;
using Held = std::set<int64_t>;

constexpr milliseconds kSecond(1000);

RecoveryOptions WithTtl(milliseconds ttl) {
  RecoveryOptions options;
  options.heartbeat_ttl = ttl;
  return options;
}

bool IsProbeShaped(const kv_indexer::v1::ApplyExternalKvBatchRequest& r) {
  return r.enforce_sequence() && r.seq() == 0 && r.actions_size() == 0;
}

// Heartbeats the server answered OK.
size_t OkBeats(const FakeGatedServer& server) {
  size_t n = 0;
  for (const auto& beat : server.beats) {
    n += beat.answer == absl::StatusCode::kOk ? 1 : 0;
  }
  return n;
}

// Applies shaped like a PROBE, heartbeats included.
int ProbeShapedApplies(const FakeGatedServer& server) {
  int n = 0;
  for (const auto& r : server.applies) n += IsProbeShaped(r) ? 1 : 0;
  return n;
}

RecoveryRig::Setup LiveWithProbe() { return {.worker_probe = true}; }

// TTL 3 s: one heartbeat a second, each a PROBE of the current epoch
// carrying the TTL.
TEST(StreamRecoveryHeartbeat, BeatsEveryThirdOfTheTtl) {
  RecoveryRig rig(LiveWithProbe(), WithTtl(3 * kSecond));
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  ASSERT_EQ(rig.server.Held(kWorker), (Held{1}));
  const size_t before = rig.server.beats.size();
  ASSERT_TRUE(rig.RunFor(10 * kSecond).ok());
  const size_t beats = rig.server.beats.size() - before;
  EXPECT_GE(beats, 9u);
  EXPECT_LE(beats, 11u);
  for (const FakeGatedServer::Beat& beat : rig.server.beats) {
    EXPECT_EQ(beat.ttl_ms, 3000u);
    EXPECT_TRUE(IsProbeShaped(beat.request));
    EXPECT_EQ(beat.request.worker_epoch(), "");
    EXPECT_EQ(beat.request.worker_id(), kWorker);
  }
  EXPECT_EQ(rig.server.beats.back().answer, absl::StatusCode::kOk);
  EXPECT_EQ(rig.stats.heartbeats, OkBeats(rig.server));
  EXPECT_EQ(rig.stats.heartbeat_probe_failures, 0u);
  EXPECT_EQ(rig.worker_probe.overlapping_starts, 0);
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1}));
}

// TTL / 3 below 100 ms is raised to 100 ms (the loop turns every 10 ms
// here, so a shorter period would show).
TEST(StreamRecoveryHeartbeat, PeriodIsAtLeast100Ms) {
  RecoveryOptions options = WithTtl(milliseconds(150));
  options.poll = milliseconds(10);
  RecoveryRig rig(LiveWithProbe(), options);
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  const size_t before = rig.server.beats.size();
  ASSERT_TRUE(rig.RunFor(2 * kSecond).ok());
  const size_t beats = rig.server.beats.size() - before;
  EXPECT_GE(beats, 19u);
  EXPECT_LE(beats, 21u);
  EXPECT_EQ(rig.server.beats.back().ttl_ms, 150u);
}

// An unreachable worker gets no heartbeat; each failed probe is counted;
// the idle probes (without the TTL) go on. Reachable again: beats resume.
TEST(StreamRecoveryHeartbeat, NoBeatWhileTheWorkerProbeFails) {
  RecoveryRig rig(LiveWithProbe(), WithTtl(3 * kSecond));
  rig.worker_probe.reachable = false;
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(5 * kSecond).ok());
  EXPECT_TRUE(rig.server.beats.empty());
  EXPECT_EQ(rig.stats.heartbeats, 0u);
  EXPECT_GE(rig.stats.heartbeat_probe_failures, 4u);
  EXPECT_LE(rig.stats.heartbeat_probe_failures, 6u);
  EXPECT_GE(rig.server.probes, 3);  // idle probes, header-less
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1}));

  rig.worker_probe.reachable = true;
  ASSERT_TRUE(rig.RunFor(3 * kSecond).ok());
  EXPECT_GE(rig.server.beats.size(), 2u);
  EXPECT_EQ(rig.stats.heartbeats, OkBeats(rig.server));
  EXPECT_EQ(rig.stats.heartbeats, rig.server.beats.size());
}

// The idle probe carries the TTL only when a heartbeat is due: with a 2 s
// period and the 1 s idle probe, every other probe is a heartbeat, and a due
// heartbeat replaces the idle probe instead of adding one.
TEST(StreamRecoveryHeartbeat, IdleProbesCarryTheTtlOnlyWhenDue) {
  RecoveryRig rig(LiveWithProbe(), WithTtl(6 * kSecond));
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  const int probes_before = ProbeShapedApplies(rig.server);
  const size_t beats_before = rig.server.beats.size();
  ASSERT_TRUE(rig.RunFor(10 * kSecond).ok());
  const int probes = ProbeShapedApplies(rig.server) - probes_before;
  const size_t beats = rig.server.beats.size() - beats_before;
  EXPECT_GE(probes, 9);
  EXPECT_LE(probes, 11);
  EXPECT_GE(beats, 4u);
  EXPECT_LE(beats, 6u);
}

// The worker probe stays unreachable: the probes that go out never carry
// the TTL.
TEST(StreamRecoveryHeartbeat, NoTtlWithoutASuccessfulWorkerProbe) {
  RecoveryRig rig(LiveWithProbe(), WithTtl(milliseconds(300)));
  rig.worker_probe.reachable = false;
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(5 * kSecond).ok());
  EXPECT_GE(ProbeShapedApplies(rig.server), 4);
  EXPECT_TRUE(rig.server.beats.empty());
}

// A heartbeat refused with FAILED_PRECONDITION (here G1: the server deleted
// the record, as its sweeper may) is a state loss: re-register, resync, and
// the blocks are back; the heartbeat noticed it, before any idle probe.
TEST(StreamRecoveryHeartbeat, RefusedBeatResynchronises) {
  RecoveryRig rig({.replay = true, .worker_probe = true},
                  WithTtl(milliseconds(300)));
  rig.publisher.Publish({Op::Store({1})});
  rig.publisher.Publish({Op::Store({2})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  ASSERT_EQ(rig.server.Held(kWorker), (Held{1, 2}));
  ASSERT_EQ(rig.server.replaces.size(), 1u);
  const size_t applies_before = rig.server.applies.size();
  const size_t beats_before = rig.server.beats.size();

  rig.server.RemoveWorker(kWorker);
  // Within 700 ms: the next heartbeat (100 ms), the 0-500 ms jitter and the
  // resync; the idle probe alone would not come before 1 s.
  ASSERT_TRUE(rig.RunFor(milliseconds(700)).ok());
  EXPECT_EQ(rig.stats.state_losses, 1u);
  ASSERT_GT(rig.server.beats.size(), beats_before);
  EXPECT_EQ(rig.server.beats[beats_before].answer,
            absl::StatusCode::kFailedPrecondition);
  // The first request after the removal was that heartbeat.
  ASSERT_GT(rig.server.applies.size(), applies_before);
  EXPECT_EQ(rig.server.applies[applies_before].SerializeAsString(),
            rig.server.beats[beats_before].request.SerializeAsString());
  // Re-registered and reinstalled from the replay.
  EXPECT_EQ(rig.server.replaces.size(), 2u);
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1, 2}));
  EXPECT_TRUE(rig.engine->exact());
  EXPECT_EQ(rig.server.beats.back().answer, absl::StatusCode::kOk);
}

// The same after a server restart (every record gone), in mode L with the
// worker idle: the blocks before the restart cannot be recovered without
// history; the next batch is installed, degraded.
TEST(StreamRecoveryHeartbeat, RefusedBeatAfterServerRestart) {
  RecoveryRig rig(LiveWithProbe(), WithTtl(milliseconds(300)));
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  rig.server.RestartEmpty();
  ASSERT_TRUE(rig.RunFor(milliseconds(700)).ok());
  EXPECT_EQ(rig.stats.state_losses, 1u);
  EXPECT_FALSE(rig.engine->synchronised());
  rig.publisher.Publish({Op::Store({2})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  EXPECT_TRUE(rig.engine->synchronised());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{2}));
  EXPECT_EQ(rig.engine->degraded_reason(), "no_history");
}

// TTL 0: no heartbeat and no worker probe at all.
TEST(StreamRecoveryHeartbeat, TtlZeroSendsNoBeat) {
  RecoveryRig rig(LiveWithProbe(), WithTtl(milliseconds(0)));
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(5 * kSecond).ok());
  EXPECT_TRUE(rig.server.beats.empty());
  EXPECT_EQ(rig.worker_probe.checks, 0);
  EXPECT_EQ(rig.stats.heartbeats, 0u);
  EXPECT_GE(rig.server.probes, 3);  // the idle probes still run
}

// Without a worker probe (the address has no port) the heartbeats go out
// unconditionally: they prove the bridge only.
TEST(StreamRecoveryHeartbeat, WithoutAProbeBeatsProveTheBridge) {
  RecoveryRig rig({}, WithTtl(3 * kSecond));
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(3 * kSecond).ok());
  EXPECT_GE(rig.server.beats.size(), 2u);
  EXPECT_EQ(rig.worker_probe.checks, 0);
}

// Legacy mode: the heartbeat is a seed-era empty apply with the TTL.
TEST(StreamRecoveryHeartbeat, LegacyBeatIsASeedEraApply) {
  RecoveryRig rig({.gate = SequenceGate::kOff, .worker_probe = true},
                  WithTtl(3 * kSecond));
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(3 * kSecond).ok());
  ASSERT_GE(rig.server.beats.size(), 2u);
  for (const FakeGatedServer::Beat& beat : rig.server.beats) {
    EXPECT_FALSE(beat.request.enforce_sequence());
    EXPECT_EQ(beat.request.actions_size(), 0);
    EXPECT_EQ(beat.request.worker_address(), "http://w:1");
    EXPECT_EQ(beat.ttl_ms, 3000u);
    EXPECT_EQ(beat.answer, absl::StatusCode::kOk);
  }
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1}));
  EXPECT_THAT(rig.server.replaces, ::testing::IsEmpty());
}

// While a synchronisation waits (mode L before its first batch) the worker
// still heartbeats; the refusals it gets then (no checkpoint yet) start no
// further resynchronisation.
TEST(StreamRecoveryHeartbeat, BeatsWhileWaitingToSynchronise) {
  RecoveryRig rig(LiveWithProbe(), WithTtl(3 * kSecond));
  ASSERT_TRUE(rig.RunFor(5 * kSecond).ok());
  EXPECT_FALSE(rig.engine->synchronised());
  EXPECT_GE(rig.server.beats.size(), 4u);
  EXPECT_EQ(rig.stats.state_losses, 0u);
  EXPECT_EQ(rig.stats.heartbeats, 0u);  // all refused: nothing installed yet
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(2 * kSecond).ok());
  EXPECT_TRUE(rig.engine->synchronised());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1}));
  EXPECT_GE(rig.stats.heartbeats, 1u);
}

// A worker probe that takes 1.5 s does not hold the engine up: batches are
// applied meanwhile, checks never overlap, and the heartbeats follow the
// probe's pace rather than the 100 ms period.
TEST(StreamRecoveryHeartbeat, SlowProbeDoesNotBlockTheEngine) {
  RecoveryRig rig(LiveWithProbe(), WithTtl(milliseconds(300)));
  rig.worker_probe.latency = milliseconds(1500);
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  ASSERT_TRUE(rig.worker_probe.pending());
  rig.publisher.Publish({Op::Store({2})});
  ASSERT_TRUE(rig.RunFor(milliseconds(200)).ok());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1, 2}));
  ASSERT_TRUE(rig.RunFor(6 * kSecond).ok());
  EXPECT_EQ(rig.worker_probe.overlapping_starts, 0);
  EXPECT_GE(rig.server.beats.size(), 3u);
  EXPECT_LE(rig.server.beats.size(), 6u);
}

// The real TCP probe made synchronous for the manual clock: each outcome is
// awaited in real time (bounded) before the engine sees it.
class AwaitedTcpProbe : public WorkerProbe {
 public:
  explicit AwaitedTcpProbe(WorkerHostPort target) : probe_(std::move(target)) {}
  void StartCheck() override { probe_.StartCheck(); }
  std::optional<absl::Status> TakeResult() override {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (std::optional<absl::Status> result = probe_.TakeResult()) {
        return result;
      }
      std::this_thread::sleep_for(milliseconds(1));
    }
    ADD_FAILURE() << "the TCP probe did not finish within 10 s";
    return std::nullopt;
  }

 private:
  TcpWorkerProbe probe_;
};

// R66 (c): a worker whose port refuses (127.0.0.1:1) never gets a
// heartbeat; a listening one gets them.
TEST(StreamRecoveryHeartbeat, R66cRefusingWorkerNeverBeats) {
  AwaitedTcpProbe refusing(WorkerHostPort{"127.0.0.1", 1});
  RecoveryRig rig({}, WithTtl(milliseconds(300)));
  // Re-wire the engine with the real probe.
  RecoveryIo io;
  io.applier = &rig.server;
  io.live = &rig.queue;
  io.clock = &rig.clock;
  io.random = [] { return uint64_t{0}; };
  io.stats = &rig.stats;
  io.worker_probe = &refusing;
  RecoveryOptions options = WithTtl(milliseconds(300));
  options.header.worker_id = kWorker;
  options.header.worker_address = "http://127.0.0.1:1";
  StreamRecovery engine(options, io);
  rig.publisher.Publish({Op::Store({1})});
  rig.clock.StopAfter(2 * kSecond);
  ASSERT_TRUE(engine.Run().ok());
  EXPECT_EQ(rig.server.Held(kWorker), (Held{1}));
  EXPECT_TRUE(rig.server.beats.empty());
  EXPECT_GE(rig.stats.heartbeat_probe_failures, 10u);

  FakeWorkerPort worker;
  ASSERT_GT(worker.port(), 0);
  AwaitedTcpProbe listening(WorkerHostPort{"127.0.0.1", worker.port()});
  io.worker_probe = &listening;
  BridgeStats stats;
  io.stats = &stats;
  StreamRecovery second(options, io);
  rig.publisher.Publish({Op::Store({2})});
  rig.clock.StopAfter(2 * kSecond);
  ASSERT_TRUE(second.Run().ok());
  EXPECT_GE(rig.server.beats.size(), 10u);
  EXPECT_EQ(stats.heartbeat_probe_failures, 0u);
  EXPECT_GE(worker.accepted(), 10u);
}

}  // namespace
}  // namespace kvindexer::bridge::testing
