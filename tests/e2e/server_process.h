// ServerProcess: starts a program as a child process for end-to-end tests,
// captures its stdout and stderr in a file, and waits on it with bounded
// timeouts. Nothing here is specific to kv-indexer-server; the bridge's e2e
// tests use it too.
//
// Typical use:
//   ProcessOptions options{.binary = KVINDEXER_SERVER_BINARY};
//   options.env["KV_INDEXER_LISTEN_ADDR"] = "127.0.0.1:0";
//   auto server = ServerProcess::Start(std::move(options));
//   std::optional<std::string> line =
//       (*server)->WaitForLineContaining("listening addr=", 10s);
//   std::optional<std::string> addr = LogField(*line, "addr");
//   ... talk to it ...
//   (*server)->Signal(SIGTERM);
//   std::optional<ExitStatus> exit = (*server)->WaitForExit(10s);
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
#ifndef KVINDEXER_TESTS_E2E_SERVER_PROCESS_H_
#define KVINDEXER_TESTS_E2E_SERVER_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kvindexer::e2e {

struct ProcessOptions {
  std::string binary;                  // path of the program
  std::vector<std::string> args;       // argv[1..]
  bool inherit_env = true;             // start from this process's environment
  std::vector<std::string> unset_env;  // then remove these names
  std::map<std::string, std::string> env;  // then set these
  // stdout and stderr are both appended here. Empty: a fresh file under
  // $TMPDIR (or /tmp), removed again by the destructor.
  std::string output_path;
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

 private:
  ServerProcess(pid_t pid, std::string output_path, bool remove_output);
  // Reaps without blocking; true once reaped.
  bool TryReap();

  pid_t pid_;
  std::string output_path_;
  bool remove_output_;
  std::optional<ExitStatus> exit_status_;
};

// Calls `condition` every `interval` until it returns true (then true) or
// until `timeout` has passed (then false).
bool WaitUntil(
    const std::function<bool()>& condition, std::chrono::milliseconds timeout,
    std::chrono::milliseconds interval = std::chrono::milliseconds(10));

// The value of `key` in a "key=value key2=value2" log line: the text after
// "key=" up to the next space, or, when it starts with a double quote, up to
// the closing quote (quotes removed). nullopt when the key is absent.
std::optional<std::string> LogField(std::string_view line,
                                    std::string_view key);

// A TCP port on `host` that was free a moment ago (bind to port 0, read the
// port, close). Racy by nature: prefer letting the server bind port 0 and
// reading its port from its log when the server supports that.
[[nodiscard]] absl::StatusOr<int> PickFreeTcpPort(
    const std::string& host = "127.0.0.1");

}  // namespace kvindexer::e2e

#endif  // KVINDEXER_TESTS_E2E_SERVER_PROCESS_H_
