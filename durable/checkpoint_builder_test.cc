// Checkpoints built by a process of their own (durable/checkpoint_builder.h):
// the builder seals and only the store publishes, the store recovers from
// what builders wrote, a failing builder costs nothing but the checkpoint,
// one that cannot start or does not take the call is replaced by the
// thread, and closing the store kills a build in progress and deletes its
// file. The faults come from kvindexer_test_checkpoint_builder.
#include "durable/checkpoint_builder.h"

#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "durable/build_priority.h"
#include "durable/builder_process.h"
#include "durable/checkpoint_file.h"
#include "durable/data_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/durable_store_fixture.h"

namespace kvindexer::durable {
namespace {

using ::testing::HasSubstr;

constexpr char kBuilder[] = KVINDEXER_TEST_CHECKPOINT_BUILDER;

// /proc/<pid>/<name>, whole.
std::string ProcFile(pid_t pid, const std::string& name) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/", name));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Reads the PID a held builder (test-hold) writes; 0 when none came within
// 30 s.
pid_t HeldBuilderPid(const std::string& pid_file) {
  pid_t pid = 0;
  for (int i = 0; i < 3000 && pid == 0; ++i) {
    std::ifstream in(pid_file);
    if (!(in >> pid)) {
      pid = 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return pid;
}

class CheckpointBuilderTest : public DurableStoreTest {
 protected:
  DurableOptions WithBuilder(std::string builder,
                             uint64_t checkpoint_bytes = 2048) {
    DurableOptions options = Options(checkpoint_bytes);
    options.checkpoint_builder = std::move(builder);
    return options;
  }
  bool HasTemporaryFile() const {
    for (const std::string& name : Files()) {
      if (name.find(".tmp") != std::string::npos) return true;
    }
    return false;
  }
};

TEST(CheckpointBuilderCommandTest, RoundTripsAndRejectsOtherShapes) {
  const CompactionJob job{.base = 4, .last_wal = 6, .reserve_blocks = 100};
  const std::vector<std::string> cmd =
      CheckpointBuilderCommand("/data dir", job, 42);
  std::vector<const char*> argv;
  for (const std::string& arg : cmd) argv.push_back(arg.c_str());
  EXPECT_TRUE(IsCheckpointBuilderCall(argv));
  EXPECT_EQ(cmd[2], "dir=/data dir");
  EXPECT_EQ(cmd[6], "parent=42");
  EXPECT_EQ(cmd[7], "priority=idle");
  EXPECT_EQ(BuilderCallPriority(argv), BuildPriority::kIdle);
  const std::vector<std::string> normal =
      CheckpointBuilderCommand("/d", job, 42, BuildPriority::kNormal);
  EXPECT_EQ(normal[7], "priority=normal");
  std::vector<const char*> normal_argv;
  for (const std::string& arg : normal) normal_argv.push_back(arg.c_str());
  EXPECT_EQ(BuilderCallPriority(normal_argv), BuildPriority::kNormal);

  const char* server[] = {"kv-indexer-server"};
  EXPECT_FALSE(IsCheckpointBuilderCall(server));
  const char* help[] = {"kv-indexer-server", "--help"};
  EXPECT_FALSE(IsCheckpointBuilderCall(help));
  // A builder call of the wrong shape is a usage error, before anything
  // else happens.
  const char* bad[] = {"kv",         "--kvindexer-build-checkpoint",
                       "dir=/d",     "base=5",
                       "last_wal=4", "reserve_blocks=0",
                       "parent=1",   "priority=idle"};
  EXPECT_EQ(RunCheckpointBuilder(bad), kBuilderUsage);
  const char* bad_priority[] = {"kv",         "--kvindexer-build-checkpoint",
                                "dir=/d",     "base=4",
                                "last_wal=4", "reserve_blocks=0",
                                "parent=1",   "priority=high"};
  EXPECT_EQ(BuilderCallPriority(bad_priority), std::nullopt);
  EXPECT_EQ(RunCheckpointBuilder(bad_priority), kBuilderUsage);
  // The shape of builds before the priority argument.
  const char* seven[] = {"kv",         "--kvindexer-build-checkpoint",
                         "dir=/d",     "base=4",
                         "last_wal=4", "reserve_blocks=0",
                         "parent=1"};
  EXPECT_EQ(RunCheckpointBuilder(seven), kBuilderUsage);
  const char* short_call[] = {"kv", "--kvindexer-build-checkpoint"};
  EXPECT_EQ(RunCheckpointBuilder(short_call), kBuilderUsage);
}

// A builder whose parent is not the one named stops at once: nobody would
// publish its work.
TEST_F(CheckpointBuilderTest, BuilderOfAnotherParentStops) {
  absl::StatusOr<std::unique_ptr<BuilderProcess>> child = BuilderProcess::Spawn(
      kBuilder, CheckpointBuilderCommand(
                    dir_.path(), CompactionJob{.base = 1, .last_wal = 1},
                    /*parent=*/1));
  ASSERT_TRUE(child.ok()) << child.status();
  const absl::Status s = (*child)->Wait();
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("exited with status 1: the server (pid 1)"));
}

// The builder leaves its checkpoint sealed under the temporary name;
// publishing it is the store's.
TEST_F(CheckpointBuilderTest, BuilderSealsAndTheStorePublishes) {
  StartOk(Options());
  Workload();
  const std::string before = State();
  Crash();
  // Generation 1 is the fresh directory's checkpoint; its log holds the
  // workload. Build checkpoint 2 from them by hand.
  absl::StatusOr<std::unique_ptr<BuilderProcess>> child = BuilderProcess::Spawn(
      kBuilder,
      CheckpointBuilderCommand(
          dir_.path(), CompactionJob{.base = 1, .last_wal = 1}, ::getpid()));
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE((*child)->Wait().ok());
  EXPECT_TRUE(Files().count(CheckpointFileName(2) + ".tmp"));
  EXPECT_FALSE(Files().count(CheckpointFileName(2)));
  ASSERT_TRUE(PublishCheckpoint(dir_.path(), 2).ok());
  EXPECT_TRUE(Files().count(CheckpointFileName(2)));
  // Recovery starts from it and replays nothing: it holds the whole state.
  StartOk(Options());
  EXPECT_EQ(store().recovery().checkpoint_generation, 2u);
  EXPECT_EQ(store().recovery().log_records, 0u);
  EXPECT_EQ(State(), before);
}

TEST_F(CheckpointBuilderTest, StoreRecoversFromCheckpointsBuiltByProcesses) {
  TestLogCapture log;
  StartOk(WithBuilder(kBuilder));
  Workload();
  const uint64_t next_seq = ApplyUntilCheckpoints(13, 2);
  EXPECT_TRUE(Logged(log, spdlog::level::info, "built by builder process"));
  EXPECT_FALSE(Logged(log, spdlog::level::info, "built by a thread"));
  EXPECT_FALSE(HasTemporaryFile());
  const std::string before = State();
  const uint64_t newest = store().checkpoints_written() + 1;
  Crash();
  StartOk(Options(2048));
  EXPECT_EQ(store().recovery().checkpoint_generation, newest);
  EXPECT_EQ(State(), before);
  EXPECT_EQ(Probe("w1", "e1"), next_seq - 1);
}

// A builder that fails after sealing its file: the store deletes the file,
// logs why, and serving goes on; the log keeps everything.
TEST_F(CheckpointBuilderTest, FailingBuilderCostsOnlyTheCheckpoint) {
  TestLogCapture log;
  std::ofstream(Path("test-fail")).put('1');
  StartOk(WithBuilder(kBuilder));
  Workload();
  ApplyW1Batches(13, 100);
  EXPECT_EQ(store().checkpoints_written(), 0u);
  EXPECT_TRUE(Logged(log, spdlog::level::err,
                     "exited with status 1: test: failing after the seal"));
  EXPECT_FALSE(HasTemporaryFile());
  const std::string before = State();
  Crash();
  std::filesystem::remove(Path("test-fail"));
  StartOk(Options(2048));
  EXPECT_EQ(State(), before);
}

// An executable that does not take the builder call (here a shell, which
// calls it a usage error) is given up on: the thread builds, then and from
// then on.
TEST_F(CheckpointBuilderTest, BuilderThatRefusesTheCallIsGivenUp) {
  TestLogCapture log;
  StartOk(WithBuilder("/bin/sh"));
  Workload();
  ApplyUntilCheckpoints(13, 2);
  std::vector<std::string> refusals;
  for (const std::string& line : log.Lines(spdlog::level::warn)) {
    if (line.find("does not build checkpoints") != std::string::npos) {
      refusals.push_back(line);
    }
  }
  EXPECT_EQ(refusals.size(), 1u) << ::testing::PrintToString(refusals);
  EXPECT_FALSE(Logged(log, spdlog::level::info, "built by builder process"));
  EXPECT_FALSE(HasTemporaryFile());
}

TEST_F(CheckpointBuilderTest, BuilderThatCannotStartIsReplacedByTheThread) {
  TestLogCapture log;
  StartOk(WithBuilder("/nonexistent/kv-indexer-server"));
  Workload();
  ApplyUntilCheckpoints(13, 1);
  EXPECT_TRUE(Logged(log, spdlog::level::warn,
                     "building in the server process instead"));
  EXPECT_TRUE(Logged(log, spdlog::level::info, "built by a thread"));
}

// Closing the store while a builder runs kills it, reaps it and deletes
// what it left. The held builder also shows how a builder sets itself up.
TEST_F(CheckpointBuilderTest, ClosingKillsABuildInProgress) {
  StartOk(Options());
  Workload();
  for (uint64_t seq = 13; seq < 60; ++seq) {
    ApplyOk(Batch("w1", "addr-1").Gated("e1", seq).Report(kTierHbm, {100}));
  }
  const std::string before = State();
  Crash();

  std::ofstream(Path("test-hold")).put('1');
  const std::string hold = Path("test-hold.pid");
  // The replayed log is past 1 KiB: a checkpoint starts at once.
  StartOk(WithBuilder(kBuilder, /*checkpoint_bytes=*/1024));
  const pid_t pid = HeldBuilderPid(hold);
  ASSERT_GT(pid, 0) << "the builder never started";
  EXPECT_EQ(::kill(pid, 0), 0);
  ASSERT_TRUE(HasTemporaryFile());
  // It prepared itself as every builder does (PrepareBuilderProcess).
  EXPECT_EQ(::sched_getscheduler(pid), SCHED_IDLE);
  EXPECT_EQ(ProcFile(pid, "oom_score_adj"), "1000\n");
  EXPECT_EQ(ProcFile(pid, "comm"), "kvidx-ckpt\n");
  EXPECT_EQ(::getpgid(pid), pid) << "a process group of its own";
  const std::string status = ProcFile(pid, "status");
  const size_t ign = status.find("SigIgn:\t");
  ASSERT_NE(ign, std::string::npos);
  const uint64_t ignored = std::stoull(status.substr(ign + 8, 16), nullptr, 16);
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) {
    EXPECT_NE(ignored & (uint64_t{1} << (sig - 1)), 0u) << "signal " << sig;
  }
  Crash();
  EXPECT_NE(::kill(pid, 0), 0);
  EXPECT_EQ(errno, ESRCH);
  std::filesystem::remove(hold);
  std::filesystem::remove(Path("test-hold"));
  EXPECT_FALSE(HasTemporaryFile());
  EXPECT_FALSE(Files().count(CheckpointFileName(2)));
  StartOk(Options());
  EXPECT_EQ(State(), before);
}

// A builder called at normal priority keeps the priority it was started
// with (its spawner's); one called at idle priority lowers itself.
TEST_F(CheckpointBuilderTest, ABuilderLowersItselfOnlyWhenCalledIdle) {
  std::ofstream(Path("test-hold")).put('1');
  const std::string hold = Path("test-hold.pid");
  errno = 0;
  const int own_nice = ::getpriority(PRIO_PROCESS, 0);
  ASSERT_EQ(errno, 0);
  for (const BuildPriority priority :
       {BuildPriority::kNormal, BuildPriority::kIdle}) {
    std::filesystem::remove(hold);
    absl::StatusOr<std::unique_ptr<BuilderProcess>> child =
        BuilderProcess::Spawn(
            kBuilder, CheckpointBuilderCommand(
                          dir_.path(), CompactionJob{.base = 1, .last_wal = 1},
                          ::getpid(), priority));
    ASSERT_TRUE(child.ok()) << child.status();
    const pid_t pid = HeldBuilderPid(hold);
    ASSERT_GT(pid, 0) << "the builder never started";
    errno = 0;
    const int nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(pid));
    ASSERT_EQ(errno, 0);
    if (priority == BuildPriority::kNormal) {
      EXPECT_EQ(::sched_getscheduler(pid), ::sched_getscheduler(0));
      EXPECT_EQ(nice, own_nice);
      EXPECT_FALSE(RunsBelowNormal(pid) && own_nice <= 0);
    } else {
      EXPECT_EQ(::sched_getscheduler(pid), SCHED_IDLE);
      EXPECT_EQ(nice, 19);
      EXPECT_TRUE(RunsBelowNormal(pid));
    }
    (*child)->Kill();
  }
  std::filesystem::remove(hold);
  std::filesystem::remove(Path("test-hold"));
}

// Where raising a build is refused (no CAP_SYS_NICE, as in most
// containers), writes that wait for an idle build starved of CPU do not wait
// for its deadline: the build starts over in a process at normal priority,
// the writes go on, and the tail stays within the bound. The test builder
// stands for the starved build: called idle, it holds until killed.
TEST_F(CheckpointBuilderTest, AnIdleBuildThatCannotBeRaisedStartsOverAtNormal) {
  TestLogCapture log;
  DurableOptions options = WithBuilder(kBuilder, /*checkpoint_bytes=*/2048);
  options.max_replay_bytes = 4096;
  options.raise_priority = [](pid_t) {
    return absl::PermissionDeniedError("test: no CAP_SYS_NICE");
  };
  // Opened from a thread five nice levels down, as in a niced server: the
  // compaction thread, and so the normal-priority build, inherit it. That
  // build also runs below nice 0, and is not started over in its turn.
  std::thread opener([&] {
    errno = 0;
    const int nice = ::getpriority(PRIO_PROCESS, 0);
    ASSERT_EQ(errno, 0);
    ASSERT_EQ(::setpriority(PRIO_PROCESS, 0, std::min(nice + 5, 19)), 0);
    StartOk(options);
  });
  opener.join();
  ASSERT_FALSE(HasFailure());
  Workload();
  store().WaitForCheckpoints();
  const uint64_t checkpoints = store().checkpoints_written();
  std::ofstream(Path("test-hold-idle")).put('1');
  std::atomic<uint64_t> next_seq{13};
  auto writer = std::async(std::launch::async, [&] {
    for (int i = 0; i < 300; ++i) ApplyW1(next_seq++);
  });
  // Without the start-over the writes would wait for the held build until
  // its deadline (ten minutes here).
  if (writer.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    // Builds from now on do not hold, and killing the held one fails it
    // (it is retried): the writer ends. The PID is the newest holder's;
    // it is checked to be one of ours before the kill.
    std::filesystem::remove(Path("test-hold-idle"));
    const pid_t held = HeldBuilderPid(Path("test-hold.pid"));
    if (held > 0 &&
        ProcFile(held, "cmdline").find(dir_.path()) != std::string::npos) {
      ::kill(held, SIGKILL);
    }
    writer.get();
    FAIL() << "writes waited for the idle build";
  }
  writer.get();
  // Not WaitForCheckpoints: a build that starts while no write waits is
  // idle, and held.
  const DurableFigures figures = store().figures();
  EXPECT_GE(figures.replay.stalls, 1u);
  EXPECT_GT(figures.checkpoints_written, checkpoints);
  // At most one start-over per build: a build started over is not started
  // over again.
  EXPECT_GE(figures.checkpoint_restarts, 1u);
  EXPECT_LE(figures.checkpoint_restarts,
            figures.checkpoints_written - checkpoints + 1);
  EXPECT_LE(figures.replay.tail_bytes, 4096u);
  EXPECT_EQ(figures.checkpoint_failures.of(CheckpointFailure::kBuild), 0u);
  EXPECT_EQ(figures.checkpoint_failures.of(CheckpointFailure::kTimeout), 0u);
  EXPECT_TRUE(Logged(log, spdlog::level::warn, "cannot be raised"));
  EXPECT_TRUE(Logged(log, spdlog::level::info,
                     "starts over in a builder process at normal priority"));
  const std::string before = State();
  Crash();
  StartOk(Options());
  EXPECT_EQ(State(), before);
  EXPECT_EQ(Probe("w1", "e1"), next_seq.load() - 1);
}

// A builder dies with the thread that started it (PR_SET_PDEATHSIG; in the
// server, the store's compaction thread), so a server that dies, however it
// dies, leaves no builder behind.
TEST_F(CheckpointBuilderTest, ABuilderDiesWithTheThreadThatStartedIt) {
  std::ofstream(Path("test-hold")).put('1');
  const std::string hold = Path("test-hold.pid");
  std::unique_ptr<BuilderProcess> child;
  pid_t pid = 0;
  std::thread spawner([&] {
    absl::StatusOr<std::unique_ptr<BuilderProcess>> spawned =
        BuilderProcess::Spawn(
            kBuilder, CheckpointBuilderCommand(
                          dir_.path(), CompactionJob{.base = 1, .last_wal = 1},
                          ::getpid()));
    ASSERT_TRUE(spawned.ok()) << spawned.status();
    child = *std::move(spawned);
    // The builder writes its PID once it has armed the signal: only then
    // may this thread end.
    pid = HeldBuilderPid(hold);
  });
  spawner.join();
  ASSERT_NE(child, nullptr);
  ASSERT_GT(pid, 0) << "the builder never started";
  // A held builder that missed the signal would end on its own alarm
  // (SIGALRM) after 120 s instead.
  const absl::Status s = child->Wait();
  EXPECT_THAT(std::string(s.message()), HasSubstr("killed by signal 9"));
}

}  // namespace
}  // namespace kvindexer::durable
