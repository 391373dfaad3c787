// LivenessTable on its own: markers, the census decision and the bound on
// the set of workers warned about. The Indexer's use of it is tested in
// indexer_liveness_test.cc.
#include "core/liveness_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

namespace kvindexer {
namespace {

using namespace std::chrono_literals;
using ::testing::IsEmpty;

class LivenessTableTest : public ::testing::Test {
 protected:
  LivenessTable::SweepPlan Plan() {
    return table_.PlanSweep(now_, [this](std::string_view id) {
      return records_.count(std::string(id)) != 0;
    });
  }
  static std::vector<std::string> Ids(const LivenessTable::SweepPlan& plan) {
    std::vector<std::string> ids;
    for (const auto& e : plan.to_clear) ids.push_back(e.worker_id);
    return ids;
  }

  LivenessTable table_;
  LivenessTable::TimePoint now_{std::chrono::hours(1)};
  std::set<std::string> records_;
};

TEST_F(LivenessTableTest, NothingMarkedNothingToClear) {
  const auto plan = Plan();
  EXPECT_THAT(plan.to_clear, IsEmpty());
  EXPECT_EQ(plan.census, 0u);
  EXPECT_FALSE(plan.refused);
  EXPECT_EQ(table_.stats().sweeps, 1u);
}

TEST_F(LivenessTableTest, ClearsExpiredWorkersInIdOrderWhileOneLives) {
  records_ = {"a", "b", "c"};
  table_.Heartbeat("c", now_, 10ms);
  table_.Heartbeat("a", now_, 10ms);
  table_.Heartbeat("b", now_, 1000ms);
  now_ += 50ms;
  const auto plan = Plan();
  EXPECT_EQ(Ids(plan), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(plan.to_clear[0].silent_for, 50ms);
  EXPECT_EQ(plan.census, 3u);
  // Planning does not unmark: the caller does, after the clear.
  EXPECT_TRUE(table_.Deadline("a").has_value());
}

TEST_F(LivenessTableTest, RefusesWhenEveryCountedWorkerExpired) {
  records_ = {"a", "b"};
  table_.Heartbeat("a", now_, 10ms);
  table_.Heartbeat("b", now_, 10ms);
  table_.Heartbeat("no-record", now_, 1000ms);  // alive, but not counted
  now_ += 50ms;
  const auto plan = Plan();
  EXPECT_TRUE(plan.refused);
  EXPECT_THAT(plan.to_clear, IsEmpty());
  EXPECT_EQ(table_.stats().sweeps_refused, 1u);
}

TEST_F(LivenessTableTest, ExpiredMarkersWithoutARecordAreDropped) {
  records_ = {"a", "b"};
  table_.Heartbeat("a", now_, 10ms);
  table_.Heartbeat("b", now_, 10ms);
  table_.Heartbeat("gone", now_, 10ms);
  table_.Heartbeat("later", now_, 1000ms);
  now_ += 50ms;
  EXPECT_TRUE(Plan().refused);  // and dropped all the same
  EXPECT_FALSE(table_.Deadline("gone").has_value());
  EXPECT_TRUE(table_.Deadline("later").has_value());
  EXPECT_EQ(table_.stats().marked_workers, 3u);
}

TEST_F(LivenessTableTest, UnmarkForgetsTheMarker) {
  table_.Heartbeat("a", now_, 10ms);
  table_.Unmark("a");
  table_.Unmark("never-marked");
  EXPECT_FALSE(table_.Deadline("a").has_value());
  EXPECT_EQ(table_.stats().marked_workers, 0u);
  EXPECT_EQ(table_.stats().heartbeats, 1u);
}

TEST_F(LivenessTableTest, MalformedHeadersAreWarnedOncePerWorker) {
  EXPECT_TRUE(table_.NoteMalformed("a"));
  EXPECT_FALSE(table_.NoteMalformed("a"));
  EXPECT_TRUE(table_.NoteMalformed("b"));
  EXPECT_EQ(table_.stats().malformed_heartbeats, 3u);
}

TEST_F(LivenessTableTest, TheWarnedSetIsBounded) {
  for (size_t i = 0; i < LivenessTable::kMaxWarnedWorkers; ++i) {
    EXPECT_TRUE(table_.NoteMalformed("w" + std::to_string(i)));
  }
  EXPECT_FALSE(table_.NoteMalformed("w0"));
  // Full: the set starts over, so w0 may be warned about again later.
  EXPECT_TRUE(table_.NoteMalformed("one-more"));
  EXPECT_TRUE(table_.NoteMalformed("w0"));
}

}  // namespace
}  // namespace kvindexer
