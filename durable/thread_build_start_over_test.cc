// A checkpoint built by a thread of the server (no builder process) that
// writes wait for and that cannot be raised (no CAP_SYS_NICE): the idle
// build is abandoned at its next check and starts over in a thread at
// normal priority, instead of holding the writes until its deadline. The
// idle build is held in the middle by a gate on its checkpoint writes that
// lets through only threads at the test's own priority.
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <mutex>
#include <string>
#include <thread>

#include "durable/durable_store.h"
#include "gtest/gtest.h"
#include "tests/support/durable_store_fixture.h"
#include "tests/support/forwarding_file_io.h"
#include "tests/support/test_log_capture.h"

namespace kvindexer::durable {
namespace thread_build_start_over_test {

// The calling thread's nice value.
int OwnNice() {
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, 0);
  return errno == 0 ? nice : 0;
}

// Once armed, a write to a checkpoint being built from a thread below the
// priority of the thread that made the gate (an idle build) waits until
// Release(): a build starved of CPU that reaches its next check only when
// the test says so. Writes of other threads, and every write after the
// release, go through.
class IdleBuildGate final : public ForwardingFileIo {
 public:
  IdleBuildGate() : nice_(OwnNice()) {}
  void Arm() {
    const std::lock_guard<std::mutex> lock(mu_);
    armed_ = true;
  }
  void Release() {
    {
      const std::lock_guard<std::mutex> lock(mu_);
      armed_ = false;
      released_ = true;
    }
    changed_.notify_all();
  }

  ssize_t Write(int fd, const void* data, size_t size) override {
    if (FdPathEndsWith(fd, ".ckpt.tmp") && OwnNice() > nice_) {
      std::unique_lock<std::mutex> lock(mu_);
      if (armed_) {
        changed_.wait(lock, [this] { return released_; });
      }
    }
    return ForwardingFileIo::Write(fd, data, size);
  }

 private:
  const int nice_;
  std::mutex mu_;
  std::condition_variable changed_;
  bool armed_ = false;
  bool released_ = false;
};

// Bounded polling of a condition another thread makes true.
template <typename F>
bool Within(std::chrono::seconds limit, F condition) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < give_up) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return condition();
}

class ThreadBuildStartOverTest : public DurableStoreTest {
 protected:
  // The store goes first, with the gate released: it may still write
  // through gate_ while it closes.
  void TearDown() override {
    gate_.Release();
    Crash();
  }
  IdleBuildGate gate_;
};

TEST_F(ThreadBuildStartOverTest,
       AnIdleThreadBuildThatCannotBeRaisedStartsOver) {
  if (OwnNice() >= 19) GTEST_SKIP() << "an idle build would run at our nice";
  TestLogCapture log;
  DurableOptions options = Options(/*checkpoint_bytes=*/2048);
  options.max_replay_bytes = 4096;
  options.io = &gate_;
  options.raise_priority = [](pid_t) {
    return absl::PermissionDeniedError("test: no CAP_SYS_NICE");
  };
  StartOk(options);
  Workload();
  store().WaitForCheckpoints();
  const uint64_t checkpoints = store().checkpoints_written();
  gate_.Arm();

  std::atomic<uint64_t> next_seq{13};
  auto writer = std::async(std::launch::async, [&] {
    for (int i = 0; i < 300; ++i) ApplyW1(next_seq++);
  });
  // The writes reach the bound behind the held idle build; the refused
  // raise abandons it. Only then does the held write go on, as a starved
  // build would, to its next check, where it stops.
  const bool abandoned = Within(std::chrono::seconds(45), [&] {
    return Logged(log, spdlog::level::info, "it stops at its next check");
  });
  gate_.Release();
  ASSERT_EQ(writer.wait_for(std::chrono::seconds(45)),
            std::future_status::ready);
  writer.get();
  ASSERT_TRUE(abandoned) << "the idle build was not abandoned";
  store().WaitForCheckpoints();

  const DurableFigures figures = store().figures();
  EXPECT_GE(figures.replay.stalls, 1u);
  EXPECT_GT(figures.checkpoints_written, checkpoints);
  EXPECT_GE(figures.checkpoint_restarts, 1u);
  EXPECT_LE(figures.checkpoint_restarts,
            figures.checkpoints_written - checkpoints);
  EXPECT_LE(figures.replay.tail_bytes, 4096u);
  EXPECT_EQ(figures.checkpoint_failures.of(CheckpointFailure::kBuild), 0u);
  EXPECT_TRUE(Logged(log, spdlog::level::info,
                     "starts over in a thread at normal priority"));
  const std::string before = State();
  Crash();
  StartOk(Options());
  EXPECT_EQ(State(), before);
  EXPECT_EQ(Probe("w1", "e1"), next_seq.load() - 1);
}

}  // namespace thread_build_start_over_test
}  // namespace kvindexer::durable
