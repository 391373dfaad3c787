// SnapshotLease (replica/snapshot_lease.h) over the in-memory register and
// fake clocks: one holder at a time, renewal, take-over after a silent TTL,
// release, and an unreachable register.
#include "replica/snapshot_lease.h"

#include <chrono>

#include "gtest/gtest.h"
#include "tests/support/fake_clock.h"

namespace kvindexer::replica {
namespace snapshot_lease_test {

using std::chrono::milliseconds;

class SnapshotLeaseTest : public ::testing::Test {
 protected:
  fleet::MemoryLeaseRegister reg_;
  FakeMonotonicClock clock_a_;
  FakeMonotonicClock clock_b_;
  SnapshotLease a_{&reg_, "a", milliseconds(900), &clock_a_};
  SnapshotLease b_{&reg_, "b", milliseconds(900), &clock_b_};

  void Advance(milliseconds d) {
    clock_a_.Advance(d);
    clock_b_.Advance(d);
  }
};

TEST_F(SnapshotLeaseTest, TheFirstTakesItAndRenewalKeepsIt) {
  EXPECT_TRUE(a_.Tick());
  EXPECT_FALSE(b_.Tick());
  for (int i = 0; i < 10; ++i) {
    Advance(milliseconds(300));
    EXPECT_TRUE(a_.Tick());
    EXPECT_FALSE(b_.Tick());
  }
  EXPECT_EQ(reg_.Get().value()->value, "a");
}

TEST_F(SnapshotLeaseTest, ASilentHolderIsTakenOverAfterOneTtl) {
  ASSERT_TRUE(a_.Tick());
  EXPECT_FALSE(b_.Tick());  // b starts watching
  Advance(milliseconds(899));
  EXPECT_FALSE(b_.Tick());
  Advance(milliseconds(1));
  EXPECT_TRUE(b_.Tick());
  // a comes back: its renewal fails and it steps down.
  EXPECT_FALSE(a_.Tick());
  EXPECT_FALSE(a_.held());
  EXPECT_EQ(reg_.Get().value()->value, "b");
}

TEST_F(SnapshotLeaseTest, TheWatchersClockIsTheOnlyOneThatCounts) {
  ASSERT_TRUE(a_.Tick());
  EXPECT_FALSE(b_.Tick());
  // a's clock runs far ahead, b's does not move: a still renews in time.
  clock_a_.Advance(milliseconds(5000));
  EXPECT_TRUE(a_.Tick());
  clock_b_.Advance(milliseconds(600));
  EXPECT_FALSE(b_.Tick());  // a new revision restarts b's wait
  clock_b_.Advance(milliseconds(600));
  EXPECT_FALSE(b_.Tick());
}

TEST_F(SnapshotLeaseTest, AReleasedLeaseIsTakenAtOnce) {
  ASSERT_TRUE(a_.Tick());
  EXPECT_FALSE(b_.Tick());
  a_.Release();
  EXPECT_FALSE(a_.held());
  EXPECT_TRUE(b_.Tick());
}

TEST_F(SnapshotLeaseTest,
       AnUnreachableRegisterEndsTheLeaseBeforeOthersMayTakeIt) {
  ASSERT_TRUE(a_.Tick());
  reg_.SetUnavailable(true);
  Advance(milliseconds(300));
  EXPECT_TRUE(a_.Tick());  // renewal due but failed: still within 2/3 TTL
  EXPECT_EQ(a_.last_error().code(), absl::StatusCode::kUnavailable);
  Advance(milliseconds(300));
  EXPECT_FALSE(a_.Tick());
  EXPECT_FALSE(b_.Tick());
  EXPECT_EQ(b_.last_error().code(), absl::StatusCode::kUnavailable);
  reg_.SetUnavailable(false);
  // The revision a wrote last is still there; whoever waits a TTL on it
  // takes it, and a may not simply resume.
  EXPECT_FALSE(b_.Tick());
  Advance(milliseconds(900));
  EXPECT_TRUE(b_.Tick());
  EXPECT_FALSE(a_.Tick());
}

}  // namespace snapshot_lease_test
}  // namespace kvindexer::replica
