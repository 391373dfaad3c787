// LogFollower (replica/log_follower.h) over fleet::MemoryEventLog: records
// reach the Indexer in log order and leave it as the same calls made
// directly would; undecodable, refused and trimmed records are skipped and
// counted; an unreachable log is retried without loss; caught_up() and
// lag(); Stop while a read waits.
#include "replica/log_follower.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fleet/memory_event_log.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kvindexer_fleet.pb.h"
#include "tests/support/model_backend.h"
#include "tests/support/pausable_event_log.h"
#include "tests/support/requests.h"
#include "tests/support/wait_until.h"

namespace kvindexer::replica {
// Named rather than anonymous: unity builds merge anonymous namespaces.
namespace log_follower_test {

using namespace std::chrono_literals;
using ::kvindexer::test_support::WaitUntil;
using test_support::Batch;
using test_support::ModelBackend;
using test_support::Snapshot;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using LogRecord = ::kvindexer::fleet::v1::LogRecord;

constexpr auto kWaitBound = 10s;

LogRecord ApplyRecord(const ::kv_indexer::v1::ApplyExternalKvBatchRequest& r) {
  LogRecord record;
  *record.mutable_apply() = r;
  record.set_producer("bridge-a");
  return record;
}

LogRecord ReplaceRecord(
    const ::kv_indexer::v1::ReplaceExternalKvSnapshotRequest& r) {
  LogRecord record;
  *record.mutable_replace() = r;
  record.set_producer("bridge-a");
  return record;
}

// Fast retries and short read waits, so that tests run quickly.
LogFollowerOptions FastOptions() {
  LogFollowerOptions options;
  options.read_wait = 20ms;
  options.retry_initial = 1ms;
  options.retry_cap = 10ms;
  return options;
}

class LogFollowerTest : public ::testing::Test {
 protected:
  // Appends `record` filed under its worker; returns its position.
  uint64_t Append(const LogRecord& record) {
    const std::string& worker = record.has_apply()
                                    ? record.apply().worker_id()
                                    : record.replace().worker_id();
    return AppendRaw(worker, record.SerializeAsString());
  }
  uint64_t AppendRaw(const std::string& worker, const std::string& payload) {
    auto ack = log_.Append(worker, payload, "", std::nullopt);
    EXPECT_TRUE(ack.ok()) << ack.status();
    return ack.ok() ? ack->position : 0;
  }

  void StartFollower(LogFollowerOptions options = FastOptions()) {
    follower_ =
        std::make_unique<LogFollower>(log_, indexer_, std::move(options));
    follower_->Start();
  }
  bool WaitForPosition(uint64_t position) {
    return WaitUntil([&] { return follower_->applied_position() >= position; },
                     kWaitBound, 1ms);
  }

  std::vector<std::string> Holders(Indexer& indexer, int64_t hash) {
    ::kv_indexer::v1::MatchExternalKvResponse resp;
    const absl::Status s =
        indexer.operations().Match(test_support::MatchRequest({hash}), &resp);
    EXPECT_TRUE(s.ok()) << s;
    std::vector<std::string> out;
    for (const auto& match : resp.matches()) {
      for (const auto& tier : match.hashes_by_tier()) {
        out.push_back(match.worker_id() + "/" + std::to_string(tier.tier()) +
                      "/" + std::to_string(tier.hashes_size()));
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  fleet::MemoryEventLog log_;
  ModelBackend backend_;
  Indexer indexer_{&backend_};
  std::unique_ptr<LogFollower> follower_;  // last: stopped first
};

TEST_F(LogFollowerTest, AppliesInOrderAsTheSameCallsMadeDirectly) {
  // Order matters: reports then revocations of the same blocks, a snapshot
  // install, gated applies after it, and a gated apply with a gap that the
  // Indexer refuses, with what follows it on that stream.
  const std::vector<LogRecord> records = {
      ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {1, 2, 3})),
      ApplyRecord(Batch("w2", "10.0.0.2:1").Report(kTierHbm, {2, 3, 4})),
      ApplyRecord(Batch("w1", "10.0.0.1:1").Revoke(kTierHbm, {2})),
      ApplyRecord(Batch("w2", "10.0.0.2:1").Report(kTierHbm, {5})),
      ReplaceRecord(Snapshot("w2", "10.0.0.2:1")
                        .Epoch("e")
                        .AppliedSeq(4)
                        .Tier(kTierHbm, {4, 6})),
      ApplyRecord(
          Batch("w2", "10.0.0.2:1").Gated("e", 5).Report(kTierHbm, {7})),
      ApplyRecord(
          Batch("w2", "10.0.0.2:1").Gated("e", 9).Report(kTierHbm, {8})),
      ApplyRecord(
          Batch("w2", "10.0.0.2:1").Gated("e", 6).Revoke(kTierHbm, {4})),
      ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {2, 9})),
  };
  // The reference: an Indexer given the same calls directly.
  ModelBackend direct_backend;
  Indexer direct{&direct_backend};
  uint64_t direct_refused = 0;
  for (const LogRecord& record : records) {
    absl::Status s;
    if (record.has_apply()) {
      ::kv_indexer::v1::ApplyExternalKvBatchResponse resp;
      s = direct.operations().Apply(record.apply(), &resp).Wait();
    } else {
      ::kv_indexer::v1::ReplaceExternalKvSnapshotResponse resp;
      s = direct.operations().Replace(record.replace(), &resp).Wait();
    }
    direct_refused += s.ok() ? 0 : 1;
  }
  // The gap at seq 9, and seq 6 after it: the gap left the stream waiting
  // for a new snapshot.
  ASSERT_EQ(direct_refused, 2u);

  uint64_t last = 0;
  for (const LogRecord& record : records) last = Append(record);
  StartFollower();
  ASSERT_TRUE(WaitForPosition(last));

  for (int64_t hash = 1; hash <= 9; ++hash) {
    EXPECT_EQ(Holders(indexer_, hash), Holders(direct, hash))
        << "hash " << hash;
  }
  // The order shows: w1 lost 2 and then reported it again (w2, whose
  // stream has a gap, answers nothing until a new snapshot).
  EXPECT_THAT(Holders(indexer_, 2), ElementsAre(HasSubstr("w1/")));
  const LogFollowerCounts counts = follower_->counts();
  EXPECT_EQ(counts.applied, records.size() - direct_refused);
  EXPECT_EQ(counts.refused, direct_refused);
  EXPECT_EQ(follower_->refused_with(absl::StatusCode::kFailedPrecondition),
            direct_refused);
  EXPECT_EQ(counts.undecodable, 0u);
  EXPECT_EQ(counts.trimmed, 0u);
  EXPECT_EQ(follower_->applied_position(), last);
  EXPECT_EQ(follower_->lag(), 0u);
}

TEST_F(LogFollowerTest, SkipsAnUndecodableRecordAloneAndGoesOn) {
  Append(ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {1})));
  AppendRaw("w1", "\xff\xff\xff");
  // Filed under w2 but naming w1: misfiled, also skipped.
  AppendRaw("w2", ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {5}))
                      .SerializeAsString());
  const uint64_t last =
      Append(ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {2})));
  StartFollower();
  ASSERT_TRUE(WaitForPosition(last));
  EXPECT_EQ(Holders(indexer_, 1).size(), 1u);
  EXPECT_EQ(Holders(indexer_, 2).size(), 1u);
  EXPECT_TRUE(Holders(indexer_, 5).empty());
  const LogFollowerCounts counts = follower_->counts();
  EXPECT_EQ(counts.applied, 2u);
  EXPECT_EQ(counts.undecodable, 2u);
  EXPECT_EQ(counts.refused, 0u);
}

TEST_F(LogFollowerTest, RefusalsAreCountedByCodeAndSkipped) {
  // A seed-era apply registers w1; gated applies before any snapshot
  // install are refused at the gate.
  Append(ApplyRecord(Batch("w1", "10.0.0.1:1")));
  Append(ApplyRecord(
      Batch("w1", "10.0.0.1:1").Gated("e", 1).Report(kTierHbm, {8})));
  Append(ApplyRecord(
      Batch("w1", "10.0.0.1:1").Gated("e", 2).Report(kTierHbm, {9})));
  // An invalid request: an unknown action type.
  Append(ApplyRecord(Batch("w3", "10.0.0.3:1").Action(99, kTierHbm, {3})));
  const uint64_t last =
      Append(ApplyRecord(Batch("w2", "10.0.0.2:1").Report(kTierHbm, {4})));
  StartFollower();
  ASSERT_TRUE(WaitForPosition(last));
  const LogFollowerCounts counts = follower_->counts();
  EXPECT_EQ(counts.refused, 3u);
  EXPECT_EQ(counts.applied, 2u);
  EXPECT_EQ(follower_->refused_with(absl::StatusCode::kFailedPrecondition), 2u);
  EXPECT_EQ(follower_->refused_with(absl::StatusCode::kInvalidArgument), 1u);
  EXPECT_TRUE(Holders(indexer_, 8).empty());
  EXPECT_EQ(Holders(indexer_, 4).size(), 1u);
}

TEST_F(LogFollowerTest, AnUnreachableLogIsRetriedWithoutLoss) {
  Append(ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {1})));
  StartFollower();
  ASSERT_TRUE(WaitForPosition(1));
  EXPECT_TRUE(
      WaitUntil([&] { return follower_->in_contact(); }, kWaitBound, 1ms));
  log_.SetUnavailable(true);
  ASSERT_TRUE(WaitUntil([&] { return follower_->counts().read_failures >= 3; },
                        kWaitBound, 1ms))
      << "the follower retries while the log is unreachable";
  EXPECT_FALSE(follower_->in_contact());
  log_.SetUnavailable(false);
  EXPECT_TRUE(
      WaitUntil([&] { return follower_->in_contact(); }, kWaitBound, 1ms));
  uint64_t last = 0;
  for (int64_t i = 2; i <= 20; ++i) {
    last = Append(ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {i})));
  }
  ASSERT_TRUE(WaitForPosition(last));
  EXPECT_EQ(follower_->counts().applied, 20u);
  for (int64_t i = 1; i <= 20; ++i) {
    EXPECT_EQ(Holders(indexer_, i).size(), 1u) << "hash " << i;
  }
}

TEST_F(LogFollowerTest, AFailedStartIsRetriedToo) {
  log_.SetUnavailable(true);
  StartFollower();
  ASSERT_TRUE(WaitUntil([&] { return follower_->counts().read_failures >= 2; },
                        kWaitBound, 1ms));
  EXPECT_FALSE(follower_->caught_up());
  log_.SetUnavailable(false);
  const uint64_t last =
      Append(ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {1})));
  ASSERT_TRUE(WaitForPosition(last));
  EXPECT_TRUE(
      WaitUntil([&] { return follower_->caught_up(); }, kWaitBound, 1ms));
}

TEST_F(LogFollowerTest, TrimmedRecordsAreCountedAndSkipped) {
  for (int64_t i = 1; i <= 10; ++i) {
    Append(ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {i})));
  }
  ASSERT_TRUE(log_.TrimBefore(7).ok());
  StartFollower();
  ASSERT_TRUE(WaitForPosition(10));
  const LogFollowerCounts counts = follower_->counts();
  EXPECT_EQ(counts.trimmed, 6u);
  EXPECT_EQ(counts.applied, 4u);
  EXPECT_TRUE(Holders(indexer_, 6).empty());
  EXPECT_EQ(Holders(indexer_, 7).size(), 1u);
  EXPECT_TRUE(
      WaitUntil([&] { return follower_->caught_up(); }, kWaitBound, 1ms));
}

TEST_F(LogFollowerTest, TellsItsOutcomesWhatItAppliedAndWhatItSkipped) {
  for (int64_t i = 1; i <= 4; ++i) {
    Append(ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {i})));
  }
  ASSERT_TRUE(log_.TrimBefore(3).ok());
  AppliedOutcomes outcomes;
  const AppliedOutcomes::Watch watch(outcomes);
  LogFollowerOptions options = FastOptions();
  options.outcomes = &outcomes;
  StartFollower(std::move(options));
  absl::StatusOr<RecordResult> applied = outcomes.WaitFor(4, 10s);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(applied->outcome, RecordOutcome::kApplied);
  ::kv_indexer::v1::ApplyExternalKvBatchResponse response;
  EXPECT_TRUE(response.ParseFromString(applied->response));
  // Trimmed positions are passed without a result.
  EXPECT_EQ(outcomes.WaitFor(2, 10s).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(outcomes.passed(), 4u);
  // Without the skipped records the index matches no position of the log.
  EXPECT_EQ(outcomes.current(), std::nullopt);
}

TEST_F(LogFollowerTest, AWhollyTrimmedLogIsSkippedFromItsBounds) {
  for (int64_t i = 1; i <= 5; ++i) {
    Append(ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {i})));
  }
  ASSERT_TRUE(log_.TrimBefore(6).ok());
  StartFollower();
  ASSERT_TRUE(
      WaitUntil([&] { return follower_->caught_up(); }, kWaitBound, 1ms));
  EXPECT_EQ(follower_->applied_position(), 5u);
  EXPECT_EQ(follower_->counts().trimmed, 5u);
  EXPECT_EQ(follower_->counts().applied, 0u);
  const uint64_t next =
      Append(ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {6})));
  ASSERT_EQ(next, 6u);
  ASSERT_TRUE(WaitForPosition(6));
  EXPECT_EQ(follower_->counts().applied, 1u);
  EXPECT_EQ(follower_->counts().trimmed, 5u);
}

// Reloads: a fake reload that stands for the snapshot by applying what
// the snapshot would hold (hash i for each position i up to `covered`).
class ReloadingFollowerTest : public LogFollowerTest {
 protected:
  // Appends records 1..10 (hash i at position i) and trims before 7.
  void AppendTenTrimmedBeforeSeven() {
    for (int64_t i = 1; i <= 10; ++i) {
      Append(ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {i})));
    }
    ASSERT_TRUE(log_.TrimBefore(7).ok());
  }
  LogFollowerOptions ReloadingOptions(std::optional<uint64_t> covered) {
    LogFollowerOptions options = FastOptions();
    options.reload = [this,
                      covered]() -> absl::StatusOr<std::optional<uint64_t>> {
      ++reload_calls_;
      if (failures_left_ > 0) {
        --failures_left_;
        return absl::UnavailableError("snapshot store unreachable");
      }
      if (!covered.has_value()) return std::nullopt;
      std::vector<int64_t> hashes;
      for (int64_t i = 1; i <= static_cast<int64_t>(*covered); ++i) {
        hashes.push_back(i);
      }
      ::kv_indexer::v1::ApplyExternalKvBatchResponse resp;
      EXPECT_TRUE(
          indexer_.operations()
              .Apply(Batch("w1", "10.0.0.1:1").Report(kTierHbm, hashes), &resp)
              .Wait()
              .ok());
      return *covered;
    };
    return options;
  }

  std::atomic<int> reload_calls_{0};
  std::atomic<int> failures_left_{0};
};

TEST_F(ReloadingFollowerTest, AGapLoadsTheSnapshotAndReadsOnAfterIt) {
  AppendTenTrimmedBeforeSeven();
  AppliedOutcomes outcomes;
  LogFollowerOptions options = ReloadingOptions(6);
  options.outcomes = &outcomes;
  StartFollower(std::move(options));
  ASSERT_TRUE(WaitForPosition(10));
  // The snapshot put the index at a position again, and the records after
  // it carried it to the end (the outcomes hear of position 10 just after
  // the follower moves its own).
  EXPECT_TRUE(
      WaitUntil([&] { return outcomes.current() == 10u; }, kWaitBound, 1ms))
      << "current " << outcomes.current().value_or(0);
  EXPECT_TRUE(
      WaitUntil([&] { return follower_->caught_up(); }, kWaitBound, 1ms));
  const LogFollowerCounts counts = follower_->counts();
  EXPECT_EQ(counts.reloads, 1u);
  EXPECT_EQ(counts.trimmed, 0u);
  EXPECT_EQ(counts.applied, 4u);
  EXPECT_EQ(reload_calls_.load(), 1);
  for (int64_t i = 1; i <= 10; ++i) {
    EXPECT_EQ(Holders(indexer_, i).size(), 1u) << "hash " << i;
  }
}

TEST_F(ReloadingFollowerTest, AGapInAWhollyTrimmedLogReloadsToo) {
  for (int64_t i = 1; i <= 5; ++i) {
    Append(ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {i})));
  }
  ASSERT_TRUE(log_.TrimBefore(6).ok());
  StartFollower(ReloadingOptions(5));
  ASSERT_TRUE(
      WaitUntil([&] { return follower_->caught_up(); }, kWaitBound, 1ms));
  EXPECT_EQ(follower_->applied_position(), 5u);
  EXPECT_EQ(follower_->counts().reloads, 1u);
  EXPECT_EQ(follower_->counts().trimmed, 0u);
  EXPECT_EQ(Holders(indexer_, 5).size(), 1u);
}

TEST_F(ReloadingFollowerTest, AFailedReloadIsRetriedAndTheReplicaWaitsUnready) {
  AppendTenTrimmedBeforeSeven();
  failures_left_ = 1000;
  StartFollower(ReloadingOptions(6));
  ASSERT_TRUE(
      WaitUntil([&] { return follower_->counts().reload_failures >= 3; },
                kWaitBound, 1ms));
  EXPECT_FALSE(follower_->caught_up());
  const std::optional<std::string> reason = follower_->NotReadyReason();
  ASSERT_TRUE(reason.has_value());
  EXPECT_THAT(*reason, HasSubstr("reloading the newest fleet snapshot"));
  // Nothing after the gap was applied while the reload failed.
  EXPECT_EQ(follower_->counts().applied, 0u);
  EXPECT_TRUE(Holders(indexer_, 8).empty());
  failures_left_ = 0;
  ASSERT_TRUE(WaitForPosition(10));
  EXPECT_TRUE(
      WaitUntil([&] { return follower_->caught_up(); }, kWaitBound, 1ms));
  EXPECT_EQ(follower_->counts().reloads, 1u);
  EXPECT_EQ(follower_->counts().trimmed, 0u);
  EXPECT_EQ(follower_->NotReadyReason(), std::nullopt);
}

TEST_F(ReloadingFollowerTest, NoSnapshotToReloadSkipsTheGap) {
  AppendTenTrimmedBeforeSeven();
  StartFollower(ReloadingOptions(std::nullopt));
  ASSERT_TRUE(WaitForPosition(10));
  const LogFollowerCounts counts = follower_->counts();
  EXPECT_EQ(counts.reloads, 0u);
  EXPECT_EQ(counts.trimmed, 6u);
  EXPECT_EQ(counts.applied, 4u);
  EXPECT_EQ(reload_calls_.load(), 1);
  EXPECT_TRUE(Holders(indexer_, 6).empty());
  EXPECT_TRUE(
      WaitUntil([&] { return follower_->caught_up(); }, kWaitBound, 1ms));
}

TEST_F(ReloadingFollowerTest,
       ASnapshotShortOfTheGapIsLoadedOnceAndTheRestSkipped) {
  AppendTenTrimmedBeforeSeven();
  StartFollower(ReloadingOptions(3));
  ASSERT_TRUE(WaitForPosition(10));
  EXPECT_TRUE(
      WaitUntil([&] { return follower_->caught_up(); }, kWaitBound, 1ms));
  const LogFollowerCounts counts = follower_->counts();
  EXPECT_EQ(counts.reloads, 1u);
  EXPECT_EQ(counts.trimmed, 3u);  // positions 4 to 6
  EXPECT_EQ(counts.applied, 4u);
  EXPECT_EQ(reload_calls_.load(), 1);
  EXPECT_EQ(Holders(indexer_, 3).size(), 1u);
  EXPECT_TRUE(Holders(indexer_, 5).empty());
}

TEST_F(LogFollowerTest, StartsAtTheGivenPosition) {
  for (int64_t i = 1; i <= 4; ++i) {
    Append(ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {i})));
  }
  LogFollowerOptions options = FastOptions();
  options.start_position = 3;
  StartFollower(std::move(options));
  ASSERT_TRUE(WaitForPosition(4));
  EXPECT_EQ(follower_->counts().applied, 2u);
  EXPECT_EQ(follower_->counts().trimmed, 0u);
  EXPECT_TRUE(Holders(indexer_, 2).empty());
  EXPECT_EQ(Holders(indexer_, 3).size(), 1u);
}

// Records the readiness decisions the follower reports.
class ReadinessLog {
 public:
  void Add(std::optional<std::string> behind) {
    std::lock_guard<std::mutex> lock(mu_);
    decisions_.push_back(std::move(behind));
  }
  std::vector<std::optional<std::string>> decisions() const {
    std::lock_guard<std::mutex> lock(mu_);
    return decisions_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::optional<std::string>> decisions_;
};

TEST_F(LogFollowerTest, NotCaughtUpBeforeTheFirstBoundsAnswer) {
  fleet::MemoryEventLog log;
  LogFollower follower(log, indexer_, FastOptions());
  EXPECT_FALSE(follower.caught_up());
  EXPECT_EQ(follower.applied_position(), 0u);
  EXPECT_EQ(follower.lag(), 0u);
  ASSERT_TRUE(follower.NotReadyReason().has_value());
  EXPECT_THAT(*follower.NotReadyReason(), HasSubstr("catching up"));
}

TEST_F(LogFollowerTest, AnEmptyLogIsCaughtUpAtOnce) {
  ReadinessLog readiness;
  LogFollowerOptions options = FastOptions();
  options.on_readiness = [&](std::optional<std::string> behind) {
    readiness.Add(std::move(behind));
  };
  StartFollower(std::move(options));
  ASSERT_TRUE(
      WaitUntil([&] { return follower_->caught_up(); }, kWaitBound, 1ms));
  ASSERT_TRUE(WaitUntil([&] { return readiness.decisions().size() >= 2; },
                        kWaitBound, 1ms));
  const auto decisions = readiness.decisions();
  ASSERT_EQ(decisions.size(), 2u);
  ASSERT_TRUE(decisions[0].has_value());
  EXPECT_THAT(*decisions[0], HasSubstr("catching up"));
  EXPECT_FALSE(decisions[1].has_value());
}

TEST_F(LogFollowerTest, CaughtUpFollowsTheLagBothWays) {
  PausableEventLog log;
  const auto append = [&](int64_t hash) {
    ASSERT_TRUE(
        log.Append(
               "w1",
               ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {hash}))
                   .SerializeAsString(),
               "", std::nullopt)
            .ok());
  };
  for (int64_t i = 1; i <= 5; ++i) append(i);
  ReadinessLog readiness;
  LogFollowerOptions options = FastOptions();
  options.max_lag_records = 3;
  options.on_readiness = [&](std::optional<std::string> behind) {
    readiness.Add(std::move(behind));
  };
  LogFollower follower(log, indexer_, std::move(options));
  follower.Start();
  ASSERT_TRUE(WaitUntil([&] { return follower.caught_up(); }, kWaitBound, 1ms));
  EXPECT_EQ(follower.applied_position(), 5u);

  log.PauseReads(true);
  // Once one read has found the log paused, no read in progress can take
  // the records appended next.
  ASSERT_TRUE(
      WaitUntil([&] { return log.paused_reads() >= 1; }, kWaitBound, 1ms));
  for (int64_t i = 6; i <= 8; ++i) append(i);
  // At the bound: still caught up.
  ASSERT_TRUE(WaitUntil([&] { return follower.lag() == 3; }, kWaitBound, 1ms));
  EXPECT_TRUE(follower.caught_up());
  append(9);  // beyond it
  ASSERT_TRUE(WaitUntil([&] { return follower.lag() == 4; }, kWaitBound, 1ms));
  EXPECT_FALSE(follower.caught_up());
  EXPECT_EQ(follower.log_last_position(), 9u);
  ASSERT_TRUE(follower.NotReadyReason().has_value());
  EXPECT_THAT(*follower.NotReadyReason(),
              HasSubstr("KV_INDEXER_FLEET_MAX_LAG_RECORDS=3"));

  log.PauseReads(false);
  ASSERT_TRUE(WaitUntil([&] { return follower.applied_position() == 9; },
                        kWaitBound, 1ms));
  ASSERT_TRUE(WaitUntil([&] { return follower.caught_up(); }, kWaitBound, 1ms));
  ASSERT_TRUE(WaitUntil([&] { return readiness.decisions().size() == 4; },
                        kWaitBound, 1ms));
  follower.Stop();
  const auto decisions = readiness.decisions();
  ASSERT_EQ(decisions.size(), 4u);
  ASSERT_TRUE(decisions[0].has_value());
  EXPECT_THAT(*decisions[0], HasSubstr("catching up"));
  EXPECT_FALSE(decisions[1].has_value());
  ASSERT_TRUE(decisions[2].has_value());
  EXPECT_THAT(*decisions[2], HasSubstr("by 4 records"));
  EXPECT_FALSE(decisions[3].has_value());
}

TEST_F(LogFollowerTest, StopIsPromptWhileAReadWaits) {
  LogFollowerOptions options = FastOptions();
  options.read_wait = 200ms;
  StartFollower(std::move(options));
  ASSERT_TRUE(
      WaitUntil([&] { return follower_->caught_up(); }, kWaitBound, 1ms));
  // The follower now sits in Read, waiting up to 200 ms for a record.
  const auto start = std::chrono::steady_clock::now();
  follower_->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST_F(LogFollowerTest, StopIsPromptWhileARetryWaits) {
  log_.SetUnavailable(true);
  LogFollowerOptions options = FastOptions();
  options.retry_initial = 60s;
  options.retry_cap = 60s;
  StartFollower(std::move(options));
  ASSERT_TRUE(WaitUntil([&] { return follower_->counts().read_failures >= 1; },
                        kWaitBound, 1ms));
  const auto start = std::chrono::steady_clock::now();
  follower_->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

}  // namespace log_follower_test
}  // namespace kvindexer::replica
