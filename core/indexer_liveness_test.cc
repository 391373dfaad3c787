// Worker liveness in the Indexer (docs/contract.md, "Recovery > Worker
// liveness and removal"): heartbeats, sweeps, the census rule and what a
// clear does, with a fake monotonic clock. Sweeps are driven by calling
// SweepLiveness; nothing here sleeps.
//
// R66 (a)-(e) name the reference cases of the liveness specification.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/indexer.h"
#include "tests/support/fake_clock.h"
#include "tests/support/make_backend_status.h"
#include "tests/support/removable_model_backend.h"
#include "tests/support/requests.h"

namespace kvindexer {
namespace {

using namespace std::chrono_literals;
using test_support::Batch;
using test_support::ExpectedWorkers;
using test_support::MakeBackendStatus;
using test_support::MatchRequest;
using test_support::RemovableModelBackend;
using test_support::Snapshot;
using test_support::Spec;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct Line {
  spdlog::level::level_enum level;
  std::string text;
};

class IndexerLivenessTest : public ::testing::Test {
 protected:
  // An apply of `batch`, as a heartbeat with `ttl` when given.
  absl::Status Send(const v1::ApplyExternalKvBatchRequest& batch,
                    std::optional<std::chrono::milliseconds> ttl) {
    v1::ApplyExternalKvBatchResponse resp;
    return ops_
        .Apply(batch, &resp,
               {.heartbeat = ttl.has_value() ? HeartbeatHeader::Valid(*ttl)
                                             : HeartbeatHeader{}})
        .Wait();
  }
  // A seed-era heartbeat: an empty apply with the header.
  void Beat(const std::string& worker, std::chrono::milliseconds ttl) {
    const absl::Status s = Send(Batch(worker, "addr-" + worker), ttl);
    ASSERT_TRUE(s.ok()) << s;
  }
  void Hold(const std::string& worker, const std::vector<int64_t>& hashes) {
    const absl::Status s = Send(
        Batch(worker, "addr-" + worker).Report(kTierHbm, hashes), std::nullopt);
    ASSERT_TRUE(s.ok()) << s;
  }
  void Configure(const v1::ConfigureExpectedWorkersRequest& req) {
    v1::ConfigureExpectedWorkersResponse resp;
    const absl::Status s = ops_.Configure(req, &resp).Wait();
    ASSERT_TRUE(s.ok()) << s;
  }
  void Replace(const v1::ReplaceExternalKvSnapshotRequest& req) {
    v1::ReplaceExternalKvSnapshotResponse resp;
    const absl::Status s = ops_.Replace(req, &resp).Wait();
    ASSERT_TRUE(s.ok()) << s;
  }
  OperatorView::SweepResult Sweep() {
    return view_.SweepLiveness(clock_.Now());
  }

  // The hashes among 1..9 that `worker` holds, from MatchExternalKv.
  std::set<int64_t> Held(const std::string& worker) {
    v1::MatchExternalKvResponse resp;
    const absl::Status s =
        ops_.Match(MatchRequest({1, 2, 3, 4, 5, 6, 7, 8, 9}), &resp);
    EXPECT_TRUE(s.ok()) << s;
    std::set<int64_t> held;
    for (const auto& match : resp.matches()) {
      if (match.worker_id() != worker) continue;
      for (const auto& tier : match.hashes_by_tier()) {
        held.insert(tier.hashes().begin(), tier.hashes().end());
      }
    }
    return held;
  }
  bool Marked(const std::string& worker) {
    return view_.HeartbeatDeadline(worker).has_value();
  }
  std::vector<Line> LinesAt(spdlog::level::level_enum level) const {
    std::vector<Line> out;
    for (const Line& line : lines_) {
      if (line.level == level) out.push_back(line);
    }
    return out;
  }

  FakeMonotonicClock clock_;
  RemovableModelBackend backend_;
  std::vector<Line> lines_;
  WorkerLifecycleLog log_{
      [this](spdlog::level::level_enum level, std::string_view text) {
        lines_.push_back({level, std::string(text)});
      }};
  Indexer indexer_{&backend_,
                   /*gate_log=*/nullptr,
                   RequestLimits{},
                   /*backend_abi_minor=*/1,
                   &clock_,
                   &log_};
  IndexOperations& ops_ = indexer_.operations();
  OperatorView& view_ = indexer_.operator_view();
};

// --- Heartbeats ---

TEST_F(IndexerLivenessTest, AHeartbeatMarksTheWorkerUntilNowPlusTtl) {
  Beat("w", 400ms);
  EXPECT_EQ(view_.HeartbeatDeadline("w"), clock_.Now() + 400ms);
  clock_.Advance(100ms);
  Beat("w", 1000ms);  // each heartbeat sets the deadline anew
  EXPECT_EQ(view_.HeartbeatDeadline("w"), clock_.Now() + 1000ms);
  EXPECT_EQ(view_.liveness_stats().heartbeats, 2u);
  EXPECT_EQ(view_.liveness_stats().marked_workers, 1u);
}

TEST_F(IndexerLivenessTest, RearmingGivesEveryMarkedWorkerItsWholeTtl) {
  Beat("a", 400ms);
  Beat("b", 1000ms);
  Hold("c", {1});
  clock_.Advance(900ms);  // a's deadline passed, b's nearly
  view_.RearmHeartbeatMarkers(clock_.Now());
  EXPECT_EQ(view_.HeartbeatDeadline("a"), clock_.Now() + 400ms);
  EXPECT_EQ(view_.HeartbeatDeadline("b"), clock_.Now() + 1000ms);
  EXPECT_FALSE(Marked("c"));  // unmarked workers stay unmarked
  EXPECT_EQ(Sweep().cleared, 0u);
  EXPECT_EQ(view_.liveness_stats().heartbeats,
            2u);  // not counted
}

TEST_F(IndexerLivenessTest, OrdinaryAppliesNeitherMarkNorRefresh) {
  Hold("w", {1});
  EXPECT_FALSE(Marked("w"));
  Beat("w", 400ms);
  const auto deadline = view_.HeartbeatDeadline("w");
  clock_.Advance(300ms);
  Hold("w", {2});
  EXPECT_EQ(view_.HeartbeatDeadline("w"), deadline);
}

TEST_F(IndexerLivenessTest, HeartbeatsMarkWhateverTheGateDecides) {
  // G1: no record. Marked all the same.
  EXPECT_EQ(Send(Batch("new", "a").Gated("e", 0), 400ms).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Marked("new"));
  // G2: a record that is not ready.
  Configure(ExpectedWorkers().Worker("cfg", "a"));
  EXPECT_EQ(Send(Batch("cfg", "a").Gated("e", 0), 400ms).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Marked("cfg"));
  // G3: a probe.
  Replace(Snapshot("cfg", "a").Epoch("e").AppliedSeq(4));
  clock_.Advance(10ms);
  ASSERT_TRUE(Send(Batch("cfg", "a").Gated("e", 0), 500ms).ok());
  EXPECT_EQ(view_.HeartbeatDeadline("cfg"), clock_.Now() + 500ms);
  // A backend failure after the gate: marked all the same.
  backend_.inner().fail_with = MakeBackendStatus(BackendCode::kInternal, "x");
  EXPECT_FALSE(Send(Batch("seed", "a").Report(kTierHbm, {1}), 400ms).ok());
  backend_.inner().fail_with.reset();
  EXPECT_TRUE(Marked("seed"));
}

TEST_F(IndexerLivenessTest, ARequestThatFailsValidationIsNoHeartbeat) {
  EXPECT_EQ(Send(Batch("w", "a").Report(0, {1}), 400ms).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(Marked("w"));
  EXPECT_EQ(view_.liveness_stats().heartbeats, 0u);
}

TEST_F(IndexerLivenessTest, AMalformedHeaderIsIgnoredAndLoggedOncePerWorker) {
  v1::ApplyExternalKvBatchResponse resp;
  for (const char* value : {"0", "soon", "0"}) {
    ASSERT_TRUE(ops_.Apply(Batch("w", "a"), &resp,
                           {.heartbeat = HeartbeatHeader::Parse(value)})
                    .Wait()
                    .ok());
  }
  ASSERT_TRUE(ops_.Apply(Batch("v", "a"), &resp,
                         {.heartbeat = HeartbeatHeader::Parse("-1")})
                  .Wait()
                  .ok());
  EXPECT_FALSE(Marked("w"));
  EXPECT_FALSE(Marked("v"));
  const auto warnings = LinesAt(spdlog::level::warn);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0].text,
            "ignoring a heartbeat header that is not 1..4294967295 ms "
            "worker=w value=\"0\"");
  EXPECT_THAT(warnings[1].text, HasSubstr("worker=v value=\"-1\""));
  EXPECT_EQ(view_.liveness_stats().malformed_heartbeats, 4u);
  EXPECT_EQ(view_.liveness_stats().heartbeats, 0u);
}

// --- R66 ---

// (a) A heartbeating worker keeps its placements while it beats; once it
// stops it is cleared within TTL + 2 sweep periods; a worker that never
// heartbeats is never touched.
TEST_F(IndexerLivenessTest, R66aClearedOnlyAfterItsHeartbeatsStop) {
  constexpr auto kTtl = 400ms;
  constexpr auto kSweep = 100ms;  // the sweep period this test plays
  Hold("w0", {1, 2, 3});
  Hold("w1", {1, 2});
  Beat("w0", kTtl);
  // 600 ms of a beat every 200 ms and a sweep every period.
  for (int i = 1; i <= 6; ++i) {
    clock_.Advance(kSweep);
    if (i % 2 == 0) Beat("w0", kTtl);
    EXPECT_EQ(Sweep().cleared, 0u);
  }
  EXPECT_EQ(Held("w0"), (std::set<int64_t>{1, 2, 3}));

  // The beats stop.
  const auto last_beat = clock_.Now();
  Beat("w0", kTtl);
  int sweeps = 0;
  while (Held("w0").size() == 3 && sweeps < 100) {
    clock_.Advance(kSweep);
    Sweep();
    ++sweeps;
  }
  EXPECT_THAT(Held("w0"), IsEmpty());
  EXPECT_LE(clock_.Now() - last_beat, kTtl + 2 * kSweep);
  EXPECT_EQ(Held("w1"), (std::set<int64_t>{1, 2}));
  EXPECT_FALSE(Marked("w1"));
  EXPECT_FALSE(Marked("w0"));
}

// (b) Expired w0 beside a live w1: one sweep clears w0, the next clears
// nothing; w0 heartbeating again is protected.
TEST_F(IndexerLivenessTest, R66bAnExpiredWorkerBesideALiveOneIsCleared) {
  Hold("w0", {1});
  Hold("w1", {2});
  Beat("w0", 100ms);
  Beat("w1", 1000ms);
  clock_.Advance(200ms);
  EXPECT_EQ(Sweep().cleared, 1u);
  EXPECT_THAT(Held("w0"), IsEmpty());
  EXPECT_EQ(Held("w1"), (std::set<int64_t>{2}));
  EXPECT_EQ(Sweep().cleared, 0u);

  Hold("w0", {3});
  Beat("w0", 1000ms);
  clock_.Advance(500ms);
  EXPECT_EQ(Sweep().cleared, 0u);
  EXPECT_EQ(Held("w0"), (std::set<int64_t>{3}));
}

// (c) A worker that never heartbeats (a seed-era bridge, or one whose worker
// does not answer its probe) is never marked and never cleared.
TEST_F(IndexerLivenessTest, R66cAWorkerThatNeverBeatsIsNeverCleared) {
  Hold("w", {1});
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(24h);
    EXPECT_EQ(Sweep().census, 0u);
  }
  EXPECT_FALSE(Marked("w"));
  EXPECT_EQ(Held("w"), (std::set<int64_t>{1}));
}

// (d) Every one of two marked workers expired: nothing is cleared, WARN.
TEST_F(IndexerLivenessTest, R66dTwoExpiredWorkersAreNotCleared) {
  Hold("w0", {1});
  Hold("w1", {2});
  Beat("w0", 100ms);
  Beat("w1", 100ms);
  clock_.Advance(1s);
  const OperatorView::SweepResult result = Sweep();
  EXPECT_TRUE(result.refused);
  EXPECT_EQ(result.cleared, 0u);
  EXPECT_EQ(result.census, 2u);
  EXPECT_EQ(Held("w0"), (std::set<int64_t>{1}));
  EXPECT_EQ(Held("w1"), (std::set<int64_t>{2}));
  EXPECT_TRUE(Marked("w0"));
  EXPECT_TRUE(Marked("w1"));
  const auto warnings = LinesAt(spdlog::level::warn);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].text,
            "every heartbeating worker looks dead at once; refusing to clear "
            "the index marked_workers=2 refused_in_a_row=1");
  EXPECT_EQ(view_.liveness_stats().sweeps_refused, 1u);
}

// (e) A single marked worker that expired is cleared (a census of one).
TEST_F(IndexerLivenessTest, R66eASingleExpiredWorkerIsCleared) {
  Hold("w0", {1});
  Beat("w0", 100ms);
  clock_.Advance(350ms);
  const OperatorView::SweepResult result = Sweep();
  EXPECT_FALSE(result.refused);
  EXPECT_EQ(result.cleared, 1u);
  EXPECT_THAT(Held("w0"), IsEmpty());
  const auto warnings = LinesAt(spdlog::level::warn);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].text,
            "heartbeat expired; placements cleared worker=w0 silent_ms=350 "
            "record=removed");
}

// --- The census ---

TEST_F(IndexerLivenessTest, TheDeadlineItselfIsNotYetExpired) {
  Hold("w", {1});
  Beat("w", 100ms);
  clock_.Advance(100ms);
  EXPECT_EQ(Sweep().cleared, 0u);
  clock_.Advance(1ns);
  EXPECT_EQ(Sweep().cleared, 1u);
}

TEST_F(IndexerLivenessTest, RefusalsAreLoggedAtPowersOfTwoOfTheStreak) {
  Hold("w0", {1});
  Hold("w1", {2});
  Beat("w0", 100ms);
  Beat("w1", 100ms);
  clock_.Advance(1s);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(Sweep().refused);
  EXPECT_EQ(LinesAt(spdlog::level::warn).size(), 3u);  // 1st, 2nd, 4th
  // w1 comes back: the streak ends, and w0 is cleared.
  Beat("w1", 100ms);
  EXPECT_EQ(Sweep().cleared, 1u);
  lines_.clear();
  // A new outage starts a new streak, logged from its first refusal.
  Hold("w0", {1});
  Beat("w0", 100ms);
  clock_.Advance(1s);
  EXPECT_TRUE(Sweep().refused);
  const auto warnings = LinesAt(spdlog::level::warn);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0].text, HasSubstr("refused_in_a_row=1"));
  EXPECT_EQ(view_.liveness_stats().sweeps_refused, 6u);
}

// A cleared worker leaves the census, so when the last other marked worker
// dies later it is cleared too.
TEST_F(IndexerLivenessTest, ACensusShrinksAsWorkersAreCleared) {
  Hold("w0", {1});
  Hold("w1", {2});
  Beat("w0", 100ms);
  Beat("w1", 1000ms);
  clock_.Advance(200ms);
  EXPECT_EQ(Sweep().cleared, 1u);
  clock_.Advance(1s);
  const OperatorView::SweepResult result = Sweep();
  EXPECT_EQ(result.census, 1u);
  EXPECT_EQ(result.cleared, 1u);
  EXPECT_THAT(Held("w1"), IsEmpty());
}

// Marks of workers without a record are not counted, and an expired one is
// forgotten.
TEST_F(IndexerLivenessTest, MarkersWithoutARecordAreNotCounted) {
  Hold("w", {1});
  Beat("w", 100ms);
  EXPECT_FALSE(Send(Batch("ghost", "a").Gated("e", 0), 100ms).ok());  // G1
  EXPECT_TRUE(Marked("ghost"));
  clock_.Advance(1s);
  const OperatorView::SweepResult result = Sweep();
  EXPECT_EQ(result.census, 1u);
  EXPECT_EQ(result.cleared, 1u);
  EXPECT_FALSE(Marked("ghost"));
  EXPECT_EQ(view_.liveness_stats().marked_workers, 0u);
}

// --- What a clear does ---

// A worker listed by ConfigureExpectedWorkers keeps its host record,
// INVALID, with address and spec; its backend record goes.
TEST_F(IndexerLivenessTest, AConfiguredWorkerKeepsItsRecord) {
  Configure(ExpectedWorkers().Worker("w", "http://w:1"));
  Replace(Snapshot("w", "http://w:1")
              .Epoch("e")
              .AppliedSeq(7)
              .Spec(Spec(kComponentFull, 0, kTierBitHbm))
              .Tier(kTierHbm, {1, 2}));
  ASSERT_TRUE(Send(Batch("w", "http://w:1").Gated("e", 0), 100ms).ok());
  clock_.Advance(1s);
  EXPECT_EQ(Sweep().cleared, 1u);

  EXPECT_THAT(backend_.removed, ElementsAre("w"));
  EXPECT_THAT(Held("w"), IsEmpty());
  const auto state = view_.WorkerState("w");
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->state(), SequenceState::kInvalid);
  EXPECT_EQ(state->address, "http://w:1");
  EXPECT_TRUE(state->spec.has_value());
  EXPECT_TRUE(state->configured);
  EXPECT_FALSE(Marked("w"));
  // The bridge's next probe is refused at G2, and it resynchronises.
  EXPECT_EQ(Send(Batch("w", "http://w:1").Gated("e", 0), 100ms).code(),
            absl::StatusCode::kFailedPrecondition);
  const auto warnings = LinesAt(spdlog::level::warn);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].text,
            "heartbeat expired; placements cleared worker=w silent_ms=1000 "
            "record=kept");
}

// A worker that registered itself is removed, host and backend record: a
// fleet that churns worker ids does not grow.
TEST_F(IndexerLivenessTest, ASelfRegisteredWorkerIsRemoved) {
  Hold("w", {1});
  Replace(Snapshot("w", "a").Epoch("e").AppliedSeq(3).Tier(kTierHbm, {1}));
  ASSERT_TRUE(Send(Batch("w", "a").Gated("e", 0), 100ms).ok());
  clock_.Advance(1s);
  EXPECT_EQ(Sweep().cleared, 1u);
  EXPECT_THAT(backend_.removed, ElementsAre("w"));
  EXPECT_FALSE(view_.WorkerState("w").has_value());
  EXPECT_THAT(Held("w"), IsEmpty());
  // The next gated call is refused at G1; the bridge registers again.
  EXPECT_EQ(Send(Batch("w", "a").Gated("e", 0), std::nullopt).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(Send(Batch("w", "a"), std::nullopt).ok());
  EXPECT_EQ(view_.WorkerState("w")->state(), SequenceState::kUnsequenced);
}

// Clearing a worker that holds nothing changes no placement: no line, no
// count; its marker goes all the same.
TEST_F(IndexerLivenessTest, AnEmptyInvalidWorkerIsClearedSilently) {
  Configure(ExpectedWorkers().Worker("w", "a").Worker("v", "b"));
  EXPECT_FALSE(Send(Batch("w", "a").Gated("e", 0), 100ms).ok());  // G2
  EXPECT_FALSE(Send(Batch("v", "b").Gated("e", 0), 5000ms).ok());
  clock_.Advance(1s);
  const OperatorView::SweepResult result = Sweep();
  EXPECT_EQ(result.cleared, 0u);
  EXPECT_FALSE(Marked("w"));
  EXPECT_TRUE(view_.WorkerState("w").has_value());
  EXPECT_THAT(LinesAt(spdlog::level::warn), IsEmpty());
  EXPECT_EQ(view_.liveness_stats().workers_cleared, 0u);
}

TEST_F(IndexerLivenessTest, RemovingAWorkerDropsItsMarker) {
  Configure(ExpectedWorkers().Worker("w", "a").Worker("v", "b"));
  EXPECT_FALSE(Send(Batch("w", "a").Gated("e", 0), 100ms).ok());
  EXPECT_FALSE(Send(Batch("v", "b").Gated("e", 0), 100ms).ok());
  Configure(ExpectedWorkers().Worker("v", "b"));
  EXPECT_FALSE(Marked("w"));
  EXPECT_TRUE(Marked("v"));
  ASSERT_TRUE(view_.RemoveWorker("v", RemovalReason::kAdmin).ok());
  EXPECT_FALSE(Marked("v"));
}

// A backend failure leaves the worker as it was, marked, and the next sweep
// tries again.
TEST_F(IndexerLivenessTest, ABackendFailureIsRetriedByTheNextSweep) {
  Hold("w", {1});
  Beat("w", 100ms);
  clock_.Advance(1s);
  backend_.fail_removals_with =
      MakeBackendStatus(BackendCode::kInternal, "disk on fire");
  const OperatorView::SweepResult failed = Sweep();
  EXPECT_EQ(failed.cleared, 0u);
  EXPECT_EQ(failed.status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(Held("w"), (std::set<int64_t>{1}));
  EXPECT_TRUE(Marked("w"));
  EXPECT_EQ(view_.WorkerState("w")->state(), SequenceState::kUnsequenced);
  const auto errors = LinesAt(spdlog::level::err);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].text,
            "the backend failed to remove a worker; its record is kept "
            "worker=w reason=liveness error=disk on fire");
  EXPECT_EQ(view_.liveness_stats().clear_failures, 1u);

  backend_.fail_removals_with.reset();
  EXPECT_EQ(Sweep().cleared, 1u);
  EXPECT_THAT(Held("w"), IsEmpty());
}

TEST_F(IndexerLivenessTest, CountersAddUp) {
  Hold("w0", {1});
  Hold("w1", {2});
  Beat("w0", 100ms);
  Beat("w1", 100ms);
  clock_.Advance(1s);
  Sweep();  // refused
  Beat("w1", 10s);
  Sweep();  // clears w0
  Sweep();  // nothing
  const LivenessStats stats = view_.liveness_stats();
  EXPECT_EQ(stats.heartbeats, 3u);
  EXPECT_EQ(stats.sweeps, 3u);
  EXPECT_EQ(stats.sweeps_refused, 1u);
  EXPECT_EQ(stats.workers_cleared, 1u);
  EXPECT_EQ(stats.clear_failures, 0u);
  EXPECT_EQ(stats.marked_workers, 1u);
}

// --- An ABI 1.0 backend: the placements go with CLEAR batches ---

TEST(IndexerLivenessAbi10Test, SweepsClearWithBatchesAndNeverRemove) {
  FakeMonotonicClock clock;
  RemovableModelBackend backend;
  WorkerLifecycleLog log([](spdlog::level::level_enum, std::string_view) {});
  Indexer indexer(&backend, nullptr, RequestLimits{}, /*backend_abi_minor=*/0,
                  &clock, &log);
  v1::ApplyExternalKvBatchResponse resp;
  ASSERT_TRUE(indexer.operations()
                  .Apply(Batch("w", "a").Report(kTierHbm, {1}), &resp,
                         {.heartbeat = HeartbeatHeader::Valid(100ms)})
                  .Wait()
                  .ok());
  clock.Advance(1s);
  EXPECT_EQ(indexer.operator_view().SweepLiveness(clock.Now()).cleared, 1u);
  EXPECT_THAT(backend.removed, IsEmpty());
  ASSERT_EQ(backend.inner().applies.size(), 2u);
  const auto& clear = backend.inner().applies[1];
  ASSERT_EQ(clear.actions.size(), 3u);
  for (const auto& action : clear.actions) {
    EXPECT_EQ(action.type, kActionClearAllAtTier);
  }
  EXPECT_EQ(clear.worker_address, "a");
  EXPECT_FALSE(indexer.operator_view().WorkerState("w").has_value());
}

// Heartbeats of workers without a record (refused gated probes) may mark
// them, but only while fewer than max_workers markers exist: a client that
// beats for ever new ids with a long TTL cannot grow the table without bound.
TEST(IndexerLivenessBoundsTest, MarkersOfWorkersWithoutARecordAreCapped) {
  FakeMonotonicClock clock;
  RemovableModelBackend backend;
  RequestLimits limits;
  limits.max_workers = 3;
  Indexer indexer(&backend, /*gate_log=*/nullptr, limits,
                  /*backend_abi_minor=*/1, &clock);
  v1::ApplyExternalKvBatchResponse resp;
  const auto beat = [&](const std::string& id, bool gated) {
    Batch batch(id, "addr");
    if (gated) batch.Gated("e", 0);
    return indexer.operations()
        .Apply(batch, &resp,
               {.heartbeat = HeartbeatHeader::Valid(
                    std::chrono::milliseconds(4294967295))})
        .Wait();
  };
  for (int i = 0; i < 10; ++i) {
    // G1: no record. The first three still mark their worker.
    EXPECT_EQ(beat("ghost-" + std::to_string(i), /*gated=*/true).code(),
              absl::StatusCode::kFailedPrecondition);
  }
  EXPECT_EQ(indexer.operator_view().liveness_stats().marked_workers, 3u);
  EXPECT_TRUE(indexer.operator_view().HeartbeatDeadline("ghost-0").has_value());
  EXPECT_FALSE(
      indexer.operator_view().HeartbeatDeadline("ghost-3").has_value());
  // A marked ghost keeps its marker fresh; a worker with a record is always
  // marked.
  EXPECT_EQ(beat("ghost-0", /*gated=*/true).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(beat("real", /*gated=*/false).ok());
  EXPECT_TRUE(indexer.operator_view().HeartbeatDeadline("real").has_value());
  EXPECT_EQ(indexer.operator_view().liveness_stats().marked_workers, 4u);
}

}  // namespace
}  // namespace kvindexer
