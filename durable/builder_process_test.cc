// BuilderProcess: how a child ended reaches Wait, a kill from another thread
// ends it, the destructor leaves no process behind, and the child inherits
// neither blocked signals nor stray descriptors.
#include "durable/builder_process.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer::durable {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// Starts argv[0], which must be a path.
std::unique_ptr<BuilderProcess> SpawnOk(const std::vector<std::string>& argv) {
  absl::StatusOr<std::unique_ptr<BuilderProcess>> child =
      BuilderProcess::Spawn(argv[0], argv);
  EXPECT_TRUE(child.ok()) << child.status();
  return child.ok() ? *std::move(child) : nullptr;
}

bool Gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

TEST(BuilderProcessTest, ExitZeroIsOk) {
  auto child = SpawnOk({"/bin/sh", "-c", "exit 0"});
  ASSERT_NE(child, nullptr);
  EXPECT_TRUE(child->Wait().ok());
  EXPECT_TRUE(Gone(child->pid()));
}

TEST(BuilderProcessTest, FailureSaysHowItEndedAndWhatItWrote) {
  auto child = SpawnOk({"/bin/sh", "-c", "echo 'the log is damaged'; exit 3"});
  ASSERT_NE(child, nullptr);
  const absl::Status s = child->Wait();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(s.message()),
              AllOf(HasSubstr(absl::StrCat("process ", child->pid())),
                    HasSubstr("exited with status 3: the log is damaged")));
}

TEST(BuilderProcessTest, MissingExecutableCannotStart) {
  absl::StatusOr<std::unique_ptr<BuilderProcess>> child = BuilderProcess::Spawn(
      "/nonexistent/kv-indexer-server", {"kv-indexer-server", "x"});
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(child.status().message()),
              HasSubstr("/nonexistent/kv-indexer-server"));
}

TEST(BuilderProcessTest, KillFromAnotherThreadEndsWait) {
  auto child = SpawnOk({"/bin/sleep", "600"});
  ASSERT_NE(child, nullptr);
  std::thread killer([&child] { child->Kill(); });
  const absl::Status s = child->Wait();
  killer.join();
  EXPECT_THAT(std::string(s.message()), HasSubstr("killed by signal 9"));
  // Reaped: a later Kill signals nothing.
  EXPECT_TRUE(Gone(child->pid()));
  child->Kill();
}

// A child that runs too long: Wait kills it at the first true of its
// give-up question, and goes on until it has ended.
TEST(BuilderProcessTest, GivingUpKillsTheChildAndWaitsForItsEnd) {
  auto child = SpawnOk({"/bin/sleep", "600"});
  ASSERT_NE(child, nullptr);
  int asked = 0;
  const absl::Status s = child->Wait([&asked] { return ++asked == 3; });
  EXPECT_GE(asked, 3);
  EXPECT_THAT(std::string(s.message()), HasSubstr("killed by signal 9"));
  EXPECT_TRUE(Gone(child->pid()));
}

// The end is not held up by a descendant that keeps standard output open
// (here a background sleep of the shell's): Wait returns once the child
// itself has ended, with what it wrote.
TEST(BuilderProcessTest, ADescendantHoldingTheOutputDoesNotHoldTheWait) {
  auto child = SpawnOk({"/bin/sh", "-c", "sleep 600 & echo done; exit 4"});
  ASSERT_NE(child, nullptr);
  const absl::Status s = child->Wait();
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("exited with status 4: done"));
  // The background sleep is in the child's process group.
  ::kill(-child->pid(), SIGKILL);
}

TEST(BuilderProcessTest, DestructorKillsAndReapsARunningChild) {
  pid_t pid = 0;
  {
    auto child = SpawnOk({"/bin/sleep", "600"});
    ASSERT_NE(child, nullptr);
    pid = child->pid();
    EXPECT_FALSE(Gone(pid));
  }
  EXPECT_TRUE(Gone(pid));
}

// The server blocks SIGTERM for its signal thread and may hold descriptors
// without O_CLOEXEC; a builder must see neither.
TEST(BuilderProcessTest, ChildHasNoBlockedSignalsAndNoStrayDescriptors) {
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigset_t old;
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &term, &old), 0);
  const int stray = ::open("/dev/null", O_RDONLY);  // no O_CLOEXEC
  ASSERT_GE(stray, 0);
  auto child = SpawnOk(
      {"/bin/sh", "-c",
       // The shell's own descriptors, then the mask it started with (awk
       // replaces it; a shell blocks signals of its own while it waits for
       // a command it forked).
       absl::StrCat("if [ -e /proc/self/fd/", stray,
                    " ]; then echo stray; fi; exec awk '/SigBlk/ {print; "
                    "exit 1}' /proc/self/status")});
  ::close(stray);
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &old, nullptr), 0);
  ASSERT_NE(child, nullptr);
  const std::string said(child->Wait().message());
  EXPECT_THAT(said, HasSubstr("SigBlk:\t0000000000000000"));
  EXPECT_THAT(said, ::testing::Not(HasSubstr("stray")));
}

}  // namespace
}  // namespace kvindexer::durable
