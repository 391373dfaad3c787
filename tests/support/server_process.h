// ServerProcess: starts a program as a child process, captures its stdout and
// stderr in a file, and waits on it with bounded timeouts. The end-to-end
// tests of the server and of the bridge start their binaries with it, and
// kv-indexer-bench its servers.
//
// Typical use:
//   ProcessOptions options{.binary = KVINDEXER_SERVER_BINARY};
//   absl::StatusOr<ListeningServer> server =
//       StartListeningServer(std::move(options), /*port=*/0, 10s);
//   ... talk to server->address ...
//   server->process->Signal(SIGTERM);
//   std::optional<ExitStatus> exit = server->process->WaitForExit(10s);
//
// Waiting is polling with short pauses inside a bounded loop: every wait
// returns by its timeout, whatever the child does.
//
// The child gets SIGKILL if the thread that started it exits
// (PR_SET_PDEATHSIG), so a crashed test leaves no server behind; start children
// from the test's main thread. The destructor kills and reaps a child that is
// still running.
//
// Thread safety: one ServerProcess is used by one thread at a time.
#ifndef KVINDEXER_TESTS_SUPPORT_SERVER_PROCESS_H_
#define KVINDEXER_TESTS_SUPPORT_SERVER_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tests/support/wait_until.h"

namespace kvindexer::test_support {

struct ProcessOptions {
  std::string binary;                  // path of the program
  std::vector<std::string> args;       // argv[1..]
  bool inherit_env = true;             // start from this process's environment
  std::vector<std::string> unset_env;  // then remove these names
  std::map<std::string, std::string> env;  // then set these
  // stdout and stderr are both appended here. Empty: a fresh file under
  // $TMPDIR (or /tmp), removed again by the destructor. Output() and the
  // waits see only what this child appends.
  std::string output_path;
  // When set, the child's RLIMIT_FSIZE (soft and hard) in bytes, with
  // SIGXFSZ ignored: a write that would make any file larger fails with
  // EFBIG instead of killing the child. This is how the e2e tests give a
  // server a full disk. The output file is subject to it too.
  std::optional<uint64_t> file_size_limit;
};

// How a child ended.
struct ExitStatus {
  bool exited = false;  // true: exit(code); false: killed by `signal`
  int code = 0;
  int signal = 0;

  bool ok() const { return exited && code == 0; }
  std::string ToString() const;
};

class ServerProcess {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      ProcessOptions options);
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& output_path() const { return output_path_; }

  // Everything the child has written so far.
  std::string Output() const;

  // Waits until the output contains `needle`. False on timeout, or when the
  // child exits without having written it.
  bool WaitForOutput(std::string_view needle,
                     std::chrono::milliseconds timeout);

  // Waits until some complete line of the output satisfies `predicate` and
  // returns the first such line (without its newline).
  std::optional<std::string> WaitForLine(
      const std::function<bool(std::string_view line)>& predicate,
      std::chrono::milliseconds timeout);
  std::optional<std::string> WaitForLineContaining(
      std::string_view needle, std::chrono::milliseconds timeout);

  // Sends `signal`. False if the child has already been reaped.
  bool Signal(int signal);

  // Waits for the child to end and reaps it; nullopt on timeout. Once reaped,
  // returns the same status again.
  std::optional<ExitStatus> WaitForExit(std::chrono::milliseconds timeout);

  // True while the child has not ended.
  bool Running();

  // SIGKILL, then reap.
  void Kill();

  // SIGTERM, then Kill() if the child has not ended within `timeout`. OK
  // when it exited with code 0 on its own, and also when the only fault is
  // LeakSanitizer's own tracer crashing at exit (see
  // IsLeakSanitizerTracerCrash); that case is reported on stderr.
  [[nodiscard]] absl::Status Stop(std::chrono::milliseconds timeout);

  // CPU time the child has used so far, user plus system, in seconds
  // (/proc/<pid>/stat; clock-tick resolution). Negative once reaped or when
  // unreadable.
  [[nodiscard]] double CpuSeconds() const;

 private:
  ServerProcess(pid_t pid, std::string output_path, off_t output_offset,
                bool remove_output);
  // Reaps without blocking; true once reaped.
  bool TryReap();

  pid_t pid_;
  std::string output_path_;
  off_t output_offset_;  // size of the output file before the child started
  bool remove_output_;
  std::optional<ExitStatus> exit_status_;
};

// True when a child that exited with `exit` failed only because
// LeakSanitizer's stop-the-world tracer crashed while the process exited:
// exit code 1, the tracer's own "Tracer caught signal" and "fatal error"
// lines, and no leak report. It is a sanitizer runtime race with threads
// that are ending (google/sanitizers#1353), not a fault of the child, and it
// says nothing about leaks either way; every other exit still fails.
bool IsLeakSanitizerTracerCrash(const ExitStatus& exit,
                                std::string_view output);

// exit.ok(), or the tracer crash above (then noted on stderr): what a test
// expects of a child that was asked to stop.
bool EndedCleanly(const ExitStatus& exit, std::string_view output);

// The value of `key` in a "key=value key2=value2" log line: the text after
// "key=" up to the next space, or, when it starts with a double quote, up to
// the closing quote (quotes removed). nullopt when the key is absent.
std::optional<std::string> LogField(std::string_view line,
                                    std::string_view key);

// A kv_indexer.v1 server (kv-indexer-server, or kv-indexer-bench's floor
// server) listening on a loopback port.
struct ListeningServer {
  std::unique_ptr<ServerProcess> process;
  std::string address;  // "127.0.0.1:<port>"
  int port = 0;
};

// Starts `options` with KV_INDEXER_LISTEN_ADDR=127.0.0.1:<port> and waits
// until it logs "listening addr=127.0.0.1:<bound port>". `port` 0 lets the
// server pick a free port, which it then logs. Fails, quoting the server's
// output, when the server exits first or `timeout` passes.
[[nodiscard]] absl::StatusOr<ListeningServer> StartListeningServer(
    ProcessOptions options, int port, std::chrono::milliseconds timeout);

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_SERVER_PROCESS_H_
