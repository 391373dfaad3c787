// The silence rule of LogFollower (replica/log_follower.h,
// replica/log_silence.h) with a fake clock: a log that fails every call,
// or whose calls hang, makes the replica not ready once the bound has
// passed on the clock, also while the follower's own thread is blocked in
// a call; reads go on answering; once the log answers, by a Bounds or by a
// late Read, the replica is ready again only after it has read what was
// appended meanwhile. A log
// that answers without records is no silence, the silence counts from
// Start, and a bound of zero keeps the replica ready.
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fleet/memory_event_log.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kvindexer_fleet.pb.h"
#include "replica/log_follower.h"
#include "tests/support/fake_clock.h"
#include "tests/support/model_backend.h"
#include "tests/support/pausable_event_log.h"
#include "tests/support/requests.h"
#include "tests/support/wait_until.h"

namespace kvindexer::replica {
// Named rather than anonymous: unity builds merge anonymous namespaces.
namespace log_follower_silence_test {

using namespace std::chrono_literals;
using ::kvindexer::test_support::WaitUntil;
using test_support::Batch;
using test_support::ModelBackend;
using ::testing::HasSubstr;

constexpr auto kWaitBound = 10s;
constexpr auto kMaxSilence = 1000ms;
constexpr char kSilenceText[] = "no answer from the fleet event log";

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
  size_t size() const { return decisions().size(); }

 private:
  mutable std::mutex mu_;
  std::vector<std::optional<std::string>> decisions_;
};

std::string Payload(int64_t hash) {
  ::kvindexer::fleet::v1::LogRecord record;
  *record.mutable_apply() = Batch("w1", "10.0.0.1:1").Report(kTierHbm, {hash});
  record.set_producer("bridge-a");
  return record.SerializeAsString();
}

class LogFollowerSilenceTest : public ::testing::Test {
 protected:
  // A failed assertion may leave the follower in a hung call: release it
  // before the follower is joined.
  void TearDown() override {
    pausable_log_.HangCalls(false);
    pausable_log_.HangReads(false);
    follower_.reset();
  }

  LogFollowerOptions Options(std::chrono::milliseconds max_silence) {
    LogFollowerOptions options;
    options.read_wait = 20ms;
    options.retry_initial = 1ms;
    options.retry_cap = 10ms;
    options.max_silence = max_silence;
    options.clock = &clock_;
    options.on_readiness = [this](std::optional<std::string> behind) {
      readiness_.Add(std::move(behind));
    };
    return options;
  }
  void Follow(fleet::EventLog& log,
              std::chrono::milliseconds max_silence = kMaxSilence) {
    follower_ =
        std::make_unique<LogFollower>(log, indexer_, Options(max_silence));
    follower_->Start();
  }
  void Append(fleet::EventLog& log, int64_t hash) {
    ASSERT_TRUE(log.Append("w1", Payload(hash), "", std::nullopt).ok());
  }
  // Whether the index answers a query for `hash` with a holder.
  bool Holds(int64_t hash) {
    ::kv_indexer::v1::MatchExternalKvResponse resp;
    const absl::Status s =
        indexer_.operations().Match(test_support::MatchRequest({hash}), &resp);
    EXPECT_TRUE(s.ok()) << s;
    return resp.matches_size() > 0;
  }
  bool LastDecisionIsSilence() {
    const auto decisions = readiness_.decisions();
    return !decisions.empty() && decisions.back().has_value() &&
           decisions.back()->find(kSilenceText) != std::string::npos;
  }
  bool LastDecisionIsReady() {
    const auto decisions = readiness_.decisions();
    return !decisions.empty() && !decisions.back().has_value();
  }

  FakeMonotonicClock clock_;
  ModelBackend backend_;
  Indexer indexer_{&backend_};
  ReadinessLog readiness_;
  // The logs the tests follow: one that fails every call while set
  // unavailable, one whose calls hang or whose reads answer nothing.
  fleet::MemoryEventLog memory_log_;
  PausableEventLog pausable_log_;
  std::unique_ptr<LogFollower> follower_;  // last: stopped first
};

TEST_F(LogFollowerSilenceTest, ALogThatFailsIsNotReadyBeyondTheBound) {
  fleet::MemoryEventLog& log = memory_log_;
  Append(log, 1);
  Follow(log);
  ASSERT_TRUE(
      WaitUntil([&] { return follower_->caught_up(); }, kWaitBound, 1ms));
  ASSERT_TRUE(
      WaitUntil([&] { return LastDecisionIsReady(); }, kWaitBound, 1ms));

  log.SetUnavailable(true);
  // Once two calls have failed, no call that began earlier can still
  // answer: every answer so far came at the clock's first reading.
  ASSERT_TRUE(WaitUntil([&] { return follower_->counts().read_failures >= 2; },
                        kWaitBound, 1ms));
  clock_.Advance(kMaxSilence);
  EXPECT_TRUE(follower_->caught_up()) << "at the bound, not beyond it";
  EXPECT_EQ(follower_->NotReadyReason(), std::nullopt);
  EXPECT_EQ(follower_->silence(), kMaxSilence);

  clock_.Advance(1ms);
  EXPECT_FALSE(follower_->caught_up());
  ASSERT_TRUE(follower_->NotReadyReason().has_value());
  EXPECT_THAT(*follower_->NotReadyReason(),
              HasSubstr("KV_INDEXER_FLEET_MAX_SILENCE_MS=1000"));
  // Reported by the watch thread, the follower's own retrying or not.
  ASSERT_TRUE(
      WaitUntil([&] { return LastDecisionIsSilence(); }, kWaitBound, 1ms));
  EXPECT_TRUE(Holds(1)) << "reads go on";

  log.SetUnavailable(false);
  ASSERT_TRUE(
      WaitUntil([&] { return follower_->caught_up(); }, kWaitBound, 1ms));
  ASSERT_TRUE(
      WaitUntil([&] { return LastDecisionIsReady(); }, kWaitBound, 1ms));
  const auto decisions = readiness_.decisions();
  ASSERT_EQ(decisions.size(), 4u);
  EXPECT_THAT(decisions[0].value_or(""), HasSubstr("catching up"));
  EXPECT_FALSE(decisions[1].has_value());
  EXPECT_THAT(decisions[2].value_or(""), HasSubstr(kSilenceText));
  EXPECT_FALSE(decisions[3].has_value());
  EXPECT_EQ(follower_->counts().applied, 1u);
}

TEST_F(LogFollowerSilenceTest, TheBoundHoldsWhileACallHangsAndMissedRecords) {
  PausableEventLog& log = pausable_log_;
  Append(log, 1);
  Follow(log);
  ASSERT_TRUE(
      WaitUntil([&] { return follower_->caught_up(); }, kWaitBound, 1ms));

  log.HangCalls(true);
  ASSERT_TRUE(
      WaitUntil([&] { return log.hung_calls() >= 1; }, kWaitBound, 1ms));
  // The follower's thread now waits in a call that does not return.
  for (int64_t i = 2; i <= 4; ++i) Append(log, i);
  clock_.Advance(kMaxSilence + 1ms);
  ASSERT_TRUE(
      WaitUntil([&] { return LastDecisionIsSilence(); }, kWaitBound, 1ms));
  EXPECT_FALSE(follower_->caught_up());
  EXPECT_TRUE(Holds(1));
  EXPECT_FALSE(Holds(2));

  // The log answers again, but the records appended meanwhile cannot be
  // read yet: three records behind is well within the lag bound, and
  // still not ready, as the replica has not read what it missed.
  log.PauseReads(true);
  log.HangCalls(false);
  ASSERT_TRUE(
      WaitUntil([&] { return log.paused_reads() >= 2; }, kWaitBound, 1ms));
  EXPECT_EQ(follower_->lag(), 3u);
  EXPECT_FALSE(follower_->caught_up());
  ASSERT_TRUE(follower_->NotReadyReason().has_value());
  EXPECT_THAT(*follower_->NotReadyReason(),
              HasSubstr("catching up with the fleet event log: applied "
                        "position 1 of 4"));

  log.PauseReads(false);
  ASSERT_TRUE(
      WaitUntil([&] { return follower_->caught_up(); }, kWaitBound, 1ms));
  EXPECT_EQ(follower_->applied_position(), 4u);
  ASSERT_TRUE(
      WaitUntil([&] { return LastDecisionIsReady(); }, kWaitBound, 1ms));
  EXPECT_TRUE(Holds(4));
}

// A read that the log answers late, after the bound, ends the silence;
// the replica is still not ready until it has read what the log holds.
TEST_F(LogFollowerSilenceTest, ALateReadEndsTheSilenceButNotTheCatchUp) {
  PausableEventLog& log = pausable_log_;
  Append(log, 1);
  Follow(log);
  ASSERT_TRUE(
      WaitUntil([&] { return follower_->caught_up(); }, kWaitBound, 1ms));

  log.HangReads(true);
  ASSERT_TRUE(
      WaitUntil([&] { return log.hung_calls() >= 1; }, kWaitBound, 1ms));
  for (int64_t i = 2; i <= 4; ++i) Append(log, i);
  clock_.Advance(kMaxSilence + 1ms);
  ASSERT_TRUE(
      WaitUntil([&] { return LastDecisionIsSilence(); }, kWaitBound, 1ms));

  // The late read answers nothing; every later read too, for now.
  log.PauseReads(true);
  log.HangReads(false);
  ASSERT_TRUE(
      WaitUntil([&] { return log.paused_reads() >= 2; }, kWaitBound, 1ms));
  EXPECT_EQ(follower_->silence(), 0ms);
  EXPECT_EQ(follower_->lag(), 3u);
  EXPECT_FALSE(follower_->caught_up());
  ASSERT_TRUE(follower_->NotReadyReason().has_value());
  EXPECT_THAT(*follower_->NotReadyReason(), HasSubstr("catching up"));
  EXPECT_FALSE(LastDecisionIsReady());

  log.PauseReads(false);
  ASSERT_TRUE(
      WaitUntil([&] { return follower_->caught_up(); }, kWaitBound, 1ms));
  EXPECT_EQ(follower_->applied_position(), 4u);
  ASSERT_TRUE(
      WaitUntil([&] { return LastDecisionIsReady(); }, kWaitBound, 1ms));
  const auto decisions = readiness_.decisions();
  ASSERT_EQ(decisions.size(), 4u);
  EXPECT_THAT(decisions[2].value_or(""), HasSubstr(kSilenceText));
}

TEST_F(LogFollowerSilenceTest, ALogThatAnswersWithoutRecordsIsNoSilence) {
  PausableEventLog& log = pausable_log_;
  Append(log, 1);
  Follow(log);
  ASSERT_TRUE(
      WaitUntil([&] { return follower_->caught_up(); }, kWaitBound, 1ms));
  // Reads answer nothing; five steps of 600 ms, each followed by answers
  // at its end, make 3 s on the clock.
  log.PauseReads(true);
  for (int step = 0; step < 5; ++step) {
    clock_.Advance(600ms);
    const uint64_t before = log.paused_reads();
    ASSERT_TRUE(WaitUntil([&] { return log.paused_reads() >= before + 2; },
                          kWaitBound, 1ms));
    EXPECT_TRUE(follower_->caught_up()) << "step " << step;
  }
  EXPECT_EQ(readiness_.size(), 2u);
  EXPECT_TRUE(LastDecisionIsReady());
}

TEST_F(LogFollowerSilenceTest, TheSilenceCountsFromStart) {
  fleet::MemoryEventLog& log = memory_log_;
  log.SetUnavailable(true);
  follower_ = std::make_unique<LogFollower>(log, indexer_, Options(1000ms));
  clock_.Advance(1h);
  follower_->Start();
  ASSERT_TRUE(WaitUntil([&] { return follower_->counts().read_failures >= 2; },
                        kWaitBound, 1ms));
  // Never answered: catching up, then silent.
  ASSERT_TRUE(follower_->NotReadyReason().has_value());
  EXPECT_THAT(*follower_->NotReadyReason(), HasSubstr("catching up"));
  clock_.Advance(kMaxSilence + 1ms);
  ASSERT_TRUE(follower_->NotReadyReason().has_value());
  EXPECT_THAT(*follower_->NotReadyReason(), HasSubstr(kSilenceText));
  // Not ready from the first decision on: nothing to report since.
  EXPECT_EQ(readiness_.size(), 1u);

  log.SetUnavailable(false);
  ASSERT_TRUE(
      WaitUntil([&] { return follower_->caught_up(); }, kWaitBound, 1ms));
  ASSERT_TRUE(
      WaitUntil([&] { return LastDecisionIsReady(); }, kWaitBound, 1ms));
}

TEST_F(LogFollowerSilenceTest, ZeroKeepsAFailingLogReady) {
  fleet::MemoryEventLog& log = memory_log_;
  Append(log, 1);
  Follow(log, /*max_silence=*/0ms);
  ASSERT_TRUE(
      WaitUntil([&] { return follower_->caught_up(); }, kWaitBound, 1ms));
  log.SetUnavailable(true);
  ASSERT_TRUE(WaitUntil([&] { return follower_->counts().read_failures >= 2; },
                        kWaitBound, 1ms));
  clock_.Advance(24h);
  const uint64_t failures = follower_->counts().read_failures;
  ASSERT_TRUE(WaitUntil(
      [&] { return follower_->counts().read_failures >= failures + 2; },
      kWaitBound, 1ms));
  EXPECT_TRUE(follower_->caught_up());
  EXPECT_EQ(follower_->NotReadyReason(), std::nullopt);
  EXPECT_EQ(readiness_.size(), 2u);
}

}  // namespace log_follower_silence_test
}  // namespace kvindexer::replica
