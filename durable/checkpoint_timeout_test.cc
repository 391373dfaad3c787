// A checkpoint build that runs past DurableOptions::checkpoint_timeout
// (docs/durability.md, "Checkpoints"): a builder process is killed, a
// thread build stops at its next check; either way the failure is counted
// as a timeout and logged, nothing is published, and the next rotation
// retries. The timeout runs on a fake clock that the test moves once the
// build is known to be held.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "durable/checkpoint_failure.h"
#include "durable/data_dir.h"
#include "durable/durable_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/checkpoint_write_gate.h"
#include "tests/support/durable_store_fixture.h"
#include "tests/support/fake_clock.h"
#include "tests/support/wait_until.h"

namespace kvindexer::durable {
namespace checkpoint_timeout_test {

using namespace std::chrono_literals;
using ::kvindexer::test_support::WaitUntil;

constexpr char kBuilder[] = KVINDEXER_TEST_CHECKPOINT_BUILDER;
constexpr std::chrono::milliseconds kTimeout = 10min;
// Bound of the waits for what the store's threads do; they normally take
// milliseconds.
constexpr std::chrono::seconds kWaitBound{60};

class CheckpointTimeoutTest : public DurableStoreTest {
 protected:
  DurableOptions Timed(uint64_t checkpoint_bytes = 2048) {
    DurableOptions options = Options(checkpoint_bytes);
    options.clock = &clock_;
    options.checkpoint_timeout = kTimeout;
    return options;
  }
  uint64_t Failures(CheckpointFailure reason) {
    return store().figures().checkpoint_failures.of(reason);
  }
  bool HasTemporaryFile() const {
    for (const std::string& name : Files()) {
      if (name.find(".tmp") != std::string::npos) return true;
    }
    return false;
  }
  // The held builder's PID (kvindexer_test_checkpoint_builder, test-hold),
  // 0 until it has written it.
  pid_t HeldBuilder() const {
    pid_t pid = 0;
    std::ifstream in(Path("test-hold.pid"));
    return (in >> pid) ? pid : 0;
  }

  // The store goes first, with the gate open: it may still write through
  // gate_ and read clock_ while it closes.
  void TearDown() override {
    gate_.Open();
    Crash();
  }
  FakeMonotonicClock clock_;
  CheckpointWriteGate gate_;
};

TEST_F(CheckpointTimeoutTest, ABuilderProcessPastItsTimeoutIsKilledAndRetried) {
  TestLogCapture log;
  std::ofstream(Path("test-hold")).put('1');
  DurableOptions options = Timed();
  options.checkpoint_builder = kBuilder;
  StartOk(options);
  Workload();
  uint64_t seq = 13;
  pid_t pid = 0;
  for (int i = 0; i < 2000 && pid == 0; ++i) {
    ApplyW1(seq++);
    if (store().figures().checkpoint_in_progress) {
      ASSERT_TRUE(WaitUntil([&] { return (pid = HeldBuilder()) != 0; },
                            kWaitBound, 5ms))
          << "the builder never started";
    }
  }
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(store().figures().checkpoint_in_progress);

  EXPECT_EQ(Failures(CheckpointFailure::kTimeout), 0u);
  clock_.Advance(kTimeout);
  ASSERT_TRUE(WaitUntil(
      [&] {
        return Failures(CheckpointFailure::kTimeout) == 1 &&
               !store().figures().checkpoint_in_progress;
      },
      kWaitBound, 5ms));
  EXPECT_NE(::kill(pid, 0), 0);
  EXPECT_EQ(errno, ESRCH) << "killed and reaped";
  EXPECT_FALSE(HasTemporaryFile());
  EXPECT_EQ(store().checkpoints_written(), 0u);
  EXPECT_EQ(Failures(CheckpointFailure::kBuild), 0u);
  EXPECT_TRUE(Logged(log, spdlog::level::err,
                     absl::StrCat("builder process ", pid,
                                  " was killed: it ran longer than its "
                                  "timeout of 600000 ms")));
  EXPECT_TRUE(
      Logged(log, spdlog::level::err, "KV_INDEXER_CHECKPOINT_TIMEOUT_MS"));

  // The next rotation retries, and without the hold it succeeds.
  std::filesystem::remove(Path("test-hold"));
  std::filesystem::remove(Path("test-hold.pid"));
  ApplyUntilCheckpoints(seq, 1);
  EXPECT_EQ(Failures(CheckpointFailure::kTimeout), 1u);
  EXPECT_GT(store().figures().last_checkpoint_unix_seconds, 0.0);
}

TEST_F(CheckpointTimeoutTest, AThreadBuildPastItsTimeoutStopsAtItsNextCheck) {
  TestLogCapture log;
  DurableOptions options = Timed();
  options.io = &gate_;
  StartOk(options);  // its empty checkpoint passes the open gate
  gate_.Close();
  Workload();
  uint64_t seq = 13;
  for (int i = 0; i < 2000 && !gate_.Holding(); ++i) {
    ApplyW1(seq++);
    if (store().figures().checkpoint_in_progress) {
      ASSERT_TRUE(WaitUntil([&] { return gate_.Holding(); }, kWaitBound, 5ms));
    }
  }
  ASSERT_TRUE(gate_.Holding()) << "no checkpoint write was held";
  clock_.Advance(kTimeout);
  // Stopped at its next check, after the held write: nothing published.
  gate_.Open();
  ASSERT_TRUE(WaitUntil(
      [&] {
        return Failures(CheckpointFailure::kTimeout) == 1 &&
               !store().figures().checkpoint_in_progress;
      },
      kWaitBound, 5ms));
  EXPECT_FALSE(HasTemporaryFile());
  EXPECT_EQ(store().checkpoints_written(), 0u);
  EXPECT_FALSE(Files().count(CheckpointFileName(2)));
  EXPECT_TRUE(Logged(log, spdlog::level::err,
                     "was abandoned at its next check: it ran longer than "
                     "its timeout of 600000 ms"));

  ApplyUntilCheckpoints(seq, 1);
  EXPECT_EQ(Failures(CheckpointFailure::kTimeout), 1u);
  const std::string before = State();
  Crash();
  StartOk(Options(2048));
  EXPECT_EQ(State(), before);
}

// Failures of other kinds are counted under their own reasons; a build
// that finishes in time counts none.
TEST_F(CheckpointTimeoutTest, BuildsInTimeCountNoFailure) {
  StartOk(Timed());
  Workload();
  ApplyUntilCheckpoints(13, 2);
  const DurableFigures figures = store().figures();
  EXPECT_EQ(figures.checkpoint_failures.total(), 0u);
  EXPECT_FALSE(figures.checkpoint_in_progress);
  EXPECT_GT(figures.last_checkpoint_unix_seconds, 0.0);
}

}  // namespace checkpoint_timeout_test
}  // namespace kvindexer::durable
