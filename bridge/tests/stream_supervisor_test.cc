#include "bridge/stream_supervisor.h"

#include <chrono>
#include <vector>

#include "bridge/tests/fake_recovery_env.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace stream_supervisor_test {

using std::chrono::milliseconds;

// A failing attempt parks the stream for the park period, measured on the
// injected clock; the next attempt starts after it, and a stop during the
// wait ends Run() without another attempt.
TEST(StreamSupervisor, ParksOnFailureAndRetriesAfterThePeriod) {
  testing::FakeClock clock;
  clock.StopAfter(milliseconds(150'000));
  std::vector<milliseconds> attempts_at;
  StreamSupervisor* self = nullptr;
  std::vector<bool> parked_during_attempt;
  StreamSupervisor supervisor(
      "\"\"/\"w\"/0",
      [&]() -> absl::Status {
        attempts_at.push_back(clock.Elapsed());
        parked_during_attempt.push_back(self->parked());
        clock.Advance(milliseconds(1000));
        return absl::InvalidArgumentError("refused");
      },
      &clock);
  self = &supervisor;
  supervisor.Run();
  // Attempts at 0, 61 s and 122 s; the third park's wait passes the stop.
  ASSERT_EQ(attempts_at.size(), 3u);
  EXPECT_EQ(attempts_at[0], milliseconds(0));
  EXPECT_EQ(attempts_at[1], milliseconds(61'000));
  EXPECT_EQ(attempts_at[2], milliseconds(122'000));
  EXPECT_EQ(supervisor.parks(), 3u);
  EXPECT_TRUE(supervisor.parked());
  for (bool parked : parked_during_attempt) EXPECT_FALSE(parked);
}

// An attempt that returns OK without a stop starts again at once; one that
// returns while the clock is stopping ends Run() without parking.
TEST(StreamSupervisor, OkAttemptRestartsAndStopEnds) {
  testing::FakeClock clock;
  clock.StopAfter(milliseconds(3000));
  int attempts = 0;
  StreamSupervisor supervisor(
      "s",
      [&]() -> absl::Status {
        ++attempts;
        clock.Advance(milliseconds(1000));
        return clock.Stopping() ? absl::CancelledError("stopping")
                                : absl::OkStatus();
      },
      &clock, milliseconds(60'000));
  supervisor.Run();
  EXPECT_EQ(attempts, 3);
  EXPECT_EQ(supervisor.parks(), 0u);
  EXPECT_FALSE(supervisor.parked());
}

}  // namespace stream_supervisor_test
}  // namespace kvindexer::bridge
