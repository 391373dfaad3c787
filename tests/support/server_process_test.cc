// Tests of the process helper itself, with /bin/sh as the child.
#include "tests/support/server_process.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/scratch_dir.h"

namespace kvindexer::test_support {
namespace {

using namespace std::chrono_literals;

ProcessOptions Shell(const std::string& script) {
  ProcessOptions options;
  options.binary = "/bin/sh";
  options.args = {"-c", script};
  return options;
}

TEST(ServerProcessTest, CapturesStdoutAndStderrAndExitCode) {
  auto p = ServerProcess::Start(Shell("echo out; echo err >&2; exit 3"));
  ASSERT_TRUE(p.ok()) << p.status();
  const std::optional<ExitStatus> status = (*p)->WaitForExit(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->exited);
  EXPECT_EQ(status->code, 3);
  EXPECT_FALSE(status->ok());
  EXPECT_THAT((*p)->Output(), ::testing::HasSubstr("out\n"));
  EXPECT_THAT((*p)->Output(), ::testing::HasSubstr("err\n"));
}

TEST(ServerProcessTest, EnvironmentIsSetAndUnset) {
  setenv("KVINDEXER_E2E_INHERITED", "inherited", 1);
  setenv("KVINDEXER_E2E_REMOVED", "removed", 1);
  ProcessOptions options = Shell(
      "echo \"[$KVINDEXER_E2E_INHERITED][${KVINDEXER_E2E_REMOVED-unset}]"
      "[$KVINDEXER_E2E_SET]\"");
  options.unset_env = {"KVINDEXER_E2E_REMOVED"};
  options.env["KVINDEXER_E2E_SET"] = "set";
  auto p = ServerProcess::Start(std::move(options));
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*p)->WaitForExit(10s).has_value());
  EXPECT_EQ((*p)->Output(), "[inherited][unset][set]\n");
  unsetenv("KVINDEXER_E2E_INHERITED");
  unsetenv("KVINDEXER_E2E_REMOVED");
}

TEST(ServerProcessTest, WaitsAreBoundedAndKillWorks) {
  auto p = ServerProcess::Start(Shell("echo ready; exec sleep 60"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE((*p)->WaitForOutput("ready", 10s));
  EXPECT_EQ((*p)->WaitForLineContaining("ead", 10s),
            std::optional<std::string>("ready"));
  EXPECT_EQ((*p)->WaitForLine(
                [](std::string_view line) { return line.size() == 5; }, 10s),
            std::optional<std::string>("ready"));
  EXPECT_FALSE((*p)->WaitForOutput("never printed", 50ms));
  EXPECT_EQ((*p)->WaitForExit(50ms), std::nullopt);
  EXPECT_TRUE((*p)->Running());
  ASSERT_TRUE((*p)->Signal(SIGTERM));
  const std::optional<ExitStatus> status = (*p)->WaitForExit(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_FALSE(status->exited);
  EXPECT_EQ(status->signal, SIGTERM);
  EXPECT_FALSE((*p)->Signal(SIGTERM));  // already reaped
}

TEST(ServerProcessTest, OutputWaitStopsWhenChildExits) {
  auto p = ServerProcess::Start(Shell("exit 0"));
  ASSERT_TRUE(p.ok()) << p.status();
  // The wait's own bound is far longer than the test's TIMEOUT (see
  // CMakeLists.txt), so the wait can only end because the child exited; a
  // wait that ignored the exit fails the test by timing it out.
  EXPECT_FALSE((*p)->WaitForOutput("never", std::chrono::hours(1)));
  EXPECT_FALSE((*p)->Running());
}

TEST(ServerProcessTest, MissingBinaryIsAnError) {
  ProcessOptions options;
  options.binary = "/nonexistent/kvindexer-no-such-binary";
  auto p = ServerProcess::Start(std::move(options));
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()),
              ::testing::HasSubstr("kvindexer-no-such-binary"));
}

TEST(ServerProcessTest, DestructorKillsRunningChild) {
  pid_t pid = 0;
  std::string path;
  {
    auto p = ServerProcess::Start(Shell("exec sleep 60"));
    ASSERT_TRUE(p.ok()) << p.status();
    pid = (*p)->pid();
    path = (*p)->output_path();
  }
  EXPECT_NE(kill(pid, 0), 0);  // reaped: the pid no longer names our child
  EXPECT_NE(access(path.c_str(), F_OK), 0);  // temporary output removed
}

TEST(ServerProcessTest, PartialLinesDoNotMatch) {
  auto p = ServerProcess::Start(Shell("printf 'no newline'; exec sleep 60"));
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*p)->WaitForOutput("no newline", 10s));
  EXPECT_EQ((*p)->WaitForLineContaining("no newline", 50ms), std::nullopt);
}

TEST(LogFieldTest, ExtractsPlainAndQuotedValues) {
  const std::string line =
      "2026 info  starting x addr=127.0.0.1:0 max=64 build=\"gcc 12; x\" "
      "xaddr=no";
  EXPECT_EQ(LogField(line, "addr"), "127.0.0.1:0");
  EXPECT_EQ(LogField(line, "max"), "64");
  EXPECT_EQ(LogField(line, "build"), "gcc 12; x");
  EXPECT_EQ(LogField(line, "xaddr"), "no");
  EXPECT_EQ(LogField(line, "missing"), std::nullopt);
  EXPECT_EQ(LogField("addr=end", "addr"), "end");
}

TEST(ServerProcessTest, OutputIsWhatThisChildAppended) {
  const std::string path = ::testing::TempDir() + "kvindexer-process-output-" +
                           std::to_string(getpid()) + ".log";
  ProcessOptions first = Shell("echo first");
  first.output_path = path;
  auto p = ServerProcess::Start(std::move(first));
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*p)->WaitForExit(10s).has_value());
  ProcessOptions second = Shell("echo second");
  second.output_path = path;
  auto q = ServerProcess::Start(std::move(second));
  ASSERT_TRUE(q.ok()) << q.status();
  ASSERT_TRUE((*q)->WaitForExit(10s).has_value());
  EXPECT_EQ((*p)->Output(), "first\nsecond\n");  // p started at offset 0
  EXPECT_EQ((*q)->Output(), "second\n");
  unlink(path.c_str());
}

TEST(ServerProcessTest, StopEndsTheChildWithSigterm) {
  // The shell exits 0 on SIGTERM once it has announced its trap.
  auto p = ServerProcess::Start(
      Shell("trap 'exit 0' TERM; echo trapped; while :; do sleep 1; done"));
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*p)->WaitForOutput("trapped", 10s));
  EXPECT_GE((*p)->CpuSeconds(), 0.0);
  EXPECT_TRUE((*p)->Stop(10s).ok());
  EXPECT_FALSE((*p)->Running());
  EXPECT_LT((*p)->CpuSeconds(), 0.0);  // reaped
}

TEST(ServerProcessTest, StopReportsAnUncleanExit) {
  auto p = ServerProcess::Start(Shell("echo up; exec sleep 60"));
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*p)->WaitForOutput("up", 10s));
  const absl::Status stopped = (*p)->Stop(10s);
  EXPECT_EQ(stopped.code(), absl::StatusCode::kInternal) << stopped;
  EXPECT_THAT(std::string(stopped.message()),
              ::testing::HasSubstr("signal " + std::to_string(SIGTERM)));
}

// The sanitizer runtime's own crash at exit is told apart from the child's
// faults, and nothing else is excused.
TEST(ServerProcessTest, OnlyTheLeakSanitizerTracerCrashIsExcused) {
  const std::string tracer_crash =
      "stopped\nTracer caught signal 11: addr=0x200 pc=0x1 sp=0x2\n"
      "==7==LeakSanitizer has encountered a fatal error.\n";
  const ExitStatus exit1{.exited = true, .code = 1};
  EXPECT_TRUE(IsLeakSanitizerTracerCrash(exit1, tracer_crash));
  EXPECT_FALSE(IsLeakSanitizerTracerCrash(ExitStatus{.exited = true, .code = 2},
                                          tracer_crash));
  EXPECT_FALSE(IsLeakSanitizerTracerCrash(
      ExitStatus{.exited = false, .signal = SIGSEGV}, tracer_crash));
  EXPECT_FALSE(IsLeakSanitizerTracerCrash(exit1, "stopped\n"));
  EXPECT_FALSE(IsLeakSanitizerTracerCrash(
      exit1, "==7==LeakSanitizer has encountered a fatal error.\n"));
  EXPECT_FALSE(IsLeakSanitizerTracerCrash(
      exit1,
      "==7==ERROR: LeakSanitizer: detected memory leaks\n" + tracer_crash));
}

TEST(ServerProcessTest, StopExcusesOnlyTheTracerCrash) {
  auto p = ServerProcess::Start(
      Shell("trap 'echo \"Tracer caught signal 11: addr=0x0\" >&2; "
            "echo \"==1==LeakSanitizer has encountered a fatal error.\" >&2; "
            "exit 1' TERM; echo trapped; while :; do sleep 1; done"));
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*p)->WaitForOutput("trapped", 10s));
  EXPECT_TRUE((*p)->Stop(10s).ok()) << (*p)->Output();

  auto q = ServerProcess::Start(
      Shell("trap 'exit 1' TERM; echo trapped; while :; do sleep 1; done"));
  ASSERT_TRUE(q.ok()) << q.status();
  ASSERT_TRUE((*q)->WaitForOutput("trapped", 10s));
  EXPECT_EQ((*q)->Stop(10s).code(), absl::StatusCode::kInternal);
}

// A file size limit makes writes past it fail (EFBIG) without killing the
// child: the way the e2e tests fill a server's disk.
TEST(ServerProcessTest, FileSizeLimitFailsWritesInsteadOfKilling) {
  auto dir = ScratchDir::Create("kvindexer-process-test-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string file = (*dir)->Sub("big");
  ProcessOptions options = Shell("head -c 100000 /dev/zero > '" + file +
                                 "'; echo \"rc=$?\"; wc -c < '" + file + "'");
  options.file_size_limit = 4096;
  auto p = ServerProcess::Start(std::move(options));
  ASSERT_TRUE(p.ok()) << p.status();
  const std::optional<ExitStatus> status = (*p)->WaitForExit(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->ok()) << status->ToString();
  EXPECT_THAT((*p)->Output(), ::testing::HasSubstr("rc=1\n4096\n"));
}

TEST(StartListeningServerTest, ReadsTheLoggedAddress) {
  // A stand-in server that binds port 4242 when asked for port 0.
  ProcessOptions options = Shell(
      "echo \"info listening addr=${KV_INDEXER_LISTEN_ADDR%:0}:4242\"; "
      "exec sleep 60");
  auto server = StartListeningServer(std::move(options), 0, 10s);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(server->address, "127.0.0.1:4242");
  EXPECT_EQ(server->port, 4242);
}

TEST(StartListeningServerTest, ServerThatExitsFirstIsAnError) {
  auto server =
      StartListeningServer(Shell("echo cannot listen; exit 1"), 0, 10s);
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(std::string(server.status().message()),
              ::testing::AllOf(::testing::HasSubstr("exit code 1"),
                               ::testing::HasSubstr("cannot listen")));
}

}  // namespace
}  // namespace kvindexer::test_support
