// SnapshotScheduler (replica/snapshot_scheduler.h) stepped by hand on fake
// clocks: only the lease holder writes, one interval apart; a stopped holder
// hands over; a failed round is counted and retried. And the snapshot
// variables (replica/snapshot_config.h).
#include "replica/snapshot_scheduler.h"

#include <chrono>
#include <map>
#include <string>

#include "fleet/memory_event_log.h"
#include "fleet/memory_snapshot_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kvindexer_fleet.pb.h"
#include "tests/support/fake_clock.h"
#include "tests/support/requests.h"

namespace kvindexer::replica {
namespace snapshot_scheduler_test {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

class SnapshotSchedulerTest : public ::testing::Test {
 protected:
  SnapshotSchedulerTest() {
    config_.interval_ms = 1000;
    config_.keep = 2;
    config_.lease_ttl_ms = 900;
  }

  std::unique_ptr<SnapshotScheduler> Make(const std::string& name,
                                          FakeMonotonicClock* clock) {
    SnapshotRoundOptions round;
    round.writer = name;
    return std::make_unique<SnapshotScheduler>(
        &log_, &store_, &lease_, config_, round, clock,
        [] { return int64_t{1700000000000}; });
  }

  void AppendRecord() {
    ::kvindexer::fleet::v1::LogRecord record;
    *record.mutable_apply() =
        test_support::Batch("w1", "a:1").Report(kTierHbm, {++hash_});
    ASSERT_TRUE(
        log_.Append("w1", record.SerializeAsString(), "", std::nullopt).ok());
  }

  void Advance(milliseconds d) {
    clock_a_.Advance(d);
    clock_b_.Advance(d);
  }

  size_t Snapshots() { return store_.List()->size(); }

  SnapshotConfig config_;
  fleet::MemoryEventLog log_;
  fleet::MemorySnapshotStore store_;
  fleet::MemoryLeaseRegister lease_;
  FakeMonotonicClock clock_a_;
  FakeMonotonicClock clock_b_;
  int64_t hash_ = 0;
};

TEST_F(SnapshotSchedulerTest, OnlyTheHolderWritesOneIntervalApart) {
  auto a = Make("a", &clock_a_);
  auto b = Make("b", &clock_b_);
  AppendRecord();
  a->Step();
  b->Step();
  EXPECT_TRUE(a->stats().lease_held);
  EXPECT_FALSE(b->stats().lease_held);
  EXPECT_EQ(Snapshots(), 0u);  // not before one interval

  for (int i = 0; i < 4; ++i) {
    Advance(milliseconds(250));
    a->Step();
    b->Step();
  }
  EXPECT_EQ(Snapshots(), 1u);
  EXPECT_EQ(a->stats().rounds_written, 1u);
  EXPECT_EQ(a->stats().last_position, 1u);
  EXPECT_EQ(b->stats().rounds_written, 0u);

  AppendRecord();
  Advance(milliseconds(500));
  a->Step();
  EXPECT_EQ(Snapshots(), 1u);
  Advance(milliseconds(500));
  a->Step();
  EXPECT_EQ(Snapshots(), 2u);
  EXPECT_EQ(a->stats().last_position, 2u);
}

TEST_F(SnapshotSchedulerTest, AStoppedHolderHandsTheLeaseOver) {
  auto a = Make("a", &clock_a_);
  auto b = Make("b", &clock_b_);
  a->Step();
  b->Step();
  ASSERT_TRUE(a->stats().lease_held);
  a->Stop();
  EXPECT_FALSE(a->stats().lease_held);
  b->Step();
  EXPECT_TRUE(b->stats().lease_held);
  AppendRecord();
  Advance(milliseconds(1000));
  b->Step();
  EXPECT_EQ(b->stats().rounds_written, 1u);
}

TEST_F(SnapshotSchedulerTest, AFailedRoundIsRetriedAtTheNextInterval) {
  auto a = Make("a", &clock_a_);
  AppendRecord();
  a->Step();
  store_.SetUnavailable(true);
  Advance(milliseconds(1000));
  a->Step();
  EXPECT_EQ(a->stats().rounds_failed, 1u);
  store_.SetUnavailable(false);
  Advance(milliseconds(999));
  a->Step();
  EXPECT_EQ(Snapshots(), 0u);
  Advance(milliseconds(1));
  a->Step();
  EXPECT_EQ(Snapshots(), 1u);
}

TEST_F(SnapshotSchedulerTest, TheThreadStopsPromptly) {
  auto a = Make("a", &clock_a_);
  a->Start();
  a->Stop();  // bounded: the wait is a condition variable, not a sleep
  EXPECT_FALSE(a->stats().lease_held);
}

absl::StatusOr<SnapshotConfig> Parse(std::map<std::string, std::string> vars) {
  return ParseSnapshotConfig(MapEnvironment({vars.begin(), vars.end()}));
}

TEST(SnapshotConfigTest, DefaultsAndValues) {
  absl::StatusOr<SnapshotConfig> config = Parse({});
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->interval_ms, 60000u);
  EXPECT_EQ(config->keep, 2u);
  EXPECT_EQ(config->lease_ttl_ms, 15000u);
  config = Parse({{kSnapshotIntervalVar, "0"},
                  {kSnapshotKeepVar, "3"},
                  {kLeaseTtlVar, "2000"}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->interval_ms, 0u);
  EXPECT_EQ(config->keep, 3u);
  EXPECT_EQ(config->lease_ttl_ms, 2000u);
}

TEST(SnapshotConfigTest, BadValuesNameTheirVariable) {
  for (const auto& [name, value] :
       std::map<std::string, std::string>{{kSnapshotIntervalVar, "500"},
                                          {kSnapshotKeepVar, "0"},
                                          {kLeaseTtlVar, "10"}}) {
    absl::StatusOr<SnapshotConfig> config = Parse({{name, value}});
    ASSERT_FALSE(config.ok()) << name;
    EXPECT_THAT(config.status().message(), HasSubstr(name));
  }
  EXPECT_FALSE(Parse({{kSnapshotIntervalVar, "soon"}}).ok());
}

}  // namespace snapshot_scheduler_test
}  // namespace kvindexer::replica
