// ReplicaLiveness (replica/replica_liveness.h): no sweep while the replica
// does not hear the log, markers re-armed when it hears it again, sweeps as
// usual otherwise.
#include "replica/replica_liveness.h"

#include <chrono>

#include "common/heartbeat_header.h"
#include "gtest/gtest.h"
#include "tests/support/fake_clock.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"

namespace kvindexer::replica {
namespace replica_liveness_test {

using namespace std::chrono_literals;

class ReplicaLivenessTest : public ::testing::Test {
 protected:
  void Beat(const std::string& worker, std::chrono::milliseconds ttl) {
    ::kv_indexer::v1::ApplyExternalKvBatchResponse resp;
    const absl::Status s =
        indexer_.operations()
            .Apply(test_support::Batch(worker, "a:1").Report(kTierHbm, {1}),
                   &resp, {.heartbeat = HeartbeatHeader::Valid(ttl)})
            .Wait();
    ASSERT_TRUE(s.ok()) << s;
  }
  // What the replica's sweeper does each period.
  size_t SweepPeriod(bool hearing) {
    if (!gate_.BeforeSweep(hearing, indexer_.operator_view(), clock_.Now()))
      return 0;
    return indexer_.operator_view().SweepLiveness(clock_.Now()).cleared;
  }

  FakeMonotonicClock clock_;
  test_support::ModelBackend backend_;
  Indexer indexer_{&backend_, nullptr, RequestLimits{}, kBackendAbiMinor,
                   &clock_};
  ReplicaLiveness gate_;
};

TEST_F(ReplicaLivenessTest, StartsPausedAndRearmsWhenItFirstHearsTheLog) {
  Beat("w", 100ms);
  clock_.Advance(500ms);  // caught up late: the heartbeat is old
  EXPECT_EQ(SweepPeriod(false), 0u);
  EXPECT_TRUE(gate_.paused());
  EXPECT_EQ(SweepPeriod(true), 0u);  // re-arms instead of sweeping
  EXPECT_FALSE(gate_.paused());
  EXPECT_EQ(indexer_.operator_view().HeartbeatDeadline("w"),
            clock_.Now() + 100ms);
  EXPECT_EQ(SweepPeriod(true), 0u);
  clock_.Advance(101ms);
  EXPECT_EQ(SweepPeriod(true), 1u);  // silent past its TTL: cleared
}

TEST_F(ReplicaLivenessTest, AnOutageNeitherSweepsNorCountsAgainstWorkers) {
  ASSERT_EQ(SweepPeriod(true), 0u);  // leaves the start pause
  Beat("w", 100ms);
  EXPECT_EQ(SweepPeriod(false), 0u);
  clock_.Advance(10s);  // the log unreachable for far longer than the TTL
  EXPECT_EQ(SweepPeriod(false), 0u);
  EXPECT_EQ(SweepPeriod(true), 0u);
  EXPECT_TRUE(indexer_.operator_view().HeartbeatDeadline("w").has_value());
  clock_.Advance(99ms);
  EXPECT_EQ(SweepPeriod(true), 0u);
}

}  // namespace replica_liveness_test
}  // namespace kvindexer::replica
