#include "tests/support/server_process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

extern char** environ;

namespace kvindexer::test_support {
namespace {

std::string ErrnoText(int error) { return strerror(error); }

// The environment of the child as "NAME=value" strings.
std::vector<std::string> ChildEnvironment(const ProcessOptions& options) {
  std::map<std::string, std::string> vars;
  if (options.inherit_env) {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      const std::string entry(*e);
      const size_t eq = entry.find('=');
      if (eq == std::string::npos) continue;
      vars[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
  }
  for (const std::string& name : options.unset_env) vars.erase(name);
  for (const auto& [name, value] : options.env) vars[name] = value;
  std::vector<std::string> out;
  out.reserve(vars.size());
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::string ExitStatus::ToString() const {
  if (exited) return absl::StrCat("exit code ", code);
  return absl::StrCat("killed by signal ", signal, " (", strsignal(signal),
                      ")");
}

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(
    ProcessOptions options) {
  // Output file.
  bool remove_output = false;
  int out_fd = -1;
  if (options.output_path.empty()) {
    const char* tmpdir = getenv("TMPDIR");
    std::string pattern =
        absl::StrCat(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp",
                     "/kvindexer-e2e-XXXXXX.log");
    out_fd = mkostemps(pattern.data(), 4, O_CLOEXEC | O_APPEND);
    if (out_fd < 0) {
      return absl::InternalError(
          absl::StrCat("mkostemps ", pattern, ": ", ErrnoText(errno)));
    }
    options.output_path = pattern;
    remove_output = true;
  } else {
    out_fd = open(options.output_path.c_str(),
                  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out_fd < 0) {
      return absl::InternalError(
          absl::StrCat("open ", options.output_path, ": ", ErrnoText(errno)));
    }
  }
  // Output() skips what the file held before this child.
  struct stat out_stat {};
  const off_t output_offset =
      fstat(out_fd, &out_stat) == 0 ? out_stat.st_size : 0;
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int exec_error_pipe[2];
  if (null_fd < 0 || pipe2(exec_error_pipe, O_CLOEXEC) != 0) {
    const int error = errno;
    close(out_fd);
    if (null_fd >= 0) close(null_fd);
    return absl::InternalError(absl::StrCat("pipe: ", ErrnoText(error)));
  }

  // Everything the child needs is prepared before fork: after fork only
  // async-signal-safe calls are allowed.
  std::vector<std::string> argv_strings;
  argv_strings.push_back(options.binary);
  for (const std::string& a : options.args) argv_strings.push_back(a);
  std::vector<std::string> env_strings = ChildEnvironment(options);
  std::vector<char*> argv = CStrings(argv_strings);
  std::vector<char*> envp = CStrings(env_strings);
  const pid_t parent = getpid();
  const bool limit_file_size = options.file_size_limit.has_value();
  struct rlimit file_size {};
  if (limit_file_size) {
    file_size.rlim_cur = static_cast<rlim_t>(*options.file_size_limit);
    file_size.rlim_max = file_size.rlim_cur;
  }

  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    if (limit_file_size) {
      // An ignored signal stays ignored across execve.
      signal(SIGXFSZ, SIG_IGN);
      if (setrlimit(RLIMIT_FSIZE, &file_size) != 0) {
        const int error = errno;
        (void)!write(exec_error_pipe[1], &error, sizeof(error));
        _exit(127);
      }
    }
    if (dup2(null_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
        dup2(out_fd, STDERR_FILENO) < 0) {
      const int error = errno;
      (void)!write(exec_error_pipe[1], &error, sizeof(error));
      _exit(127);
    }
    execve(argv[0], argv.data(), envp.data());
    const int error = errno;
    (void)!write(exec_error_pipe[1], &error, sizeof(error));
    _exit(127);
  }
  const int fork_error = errno;
  close(out_fd);
  close(null_fd);
  close(exec_error_pipe[1]);
  if (pid < 0) {
    close(exec_error_pipe[0]);
    return absl::InternalError(absl::StrCat("fork: ", ErrnoText(fork_error)));
  }

  // The pipe closes on a successful exec; otherwise it carries errno.
  int exec_error = 0;
  ssize_t n = 0;
  do {
    n = read(exec_error_pipe[0], &exec_error, sizeof(exec_error));
  } while (n < 0 && errno == EINTR);
  close(exec_error_pipe[0]);
  auto process = std::unique_ptr<ServerProcess>(new ServerProcess(
      pid, options.output_path, output_offset, remove_output));
  if (n > 0) {
    process->WaitForExit(std::chrono::seconds(5));
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot start ", options.binary, ": ", ErrnoText(exec_error)));
  }
  return process;
}

ServerProcess::ServerProcess(pid_t pid, std::string output_path,
                             off_t output_offset, bool remove_output)
    : pid_(pid),
      output_path_(std::move(output_path)),
      output_offset_(output_offset),
      remove_output_(remove_output) {}

ServerProcess::~ServerProcess() {
  Kill();
  if (remove_output_) unlink(output_path_.c_str());
}

std::string ServerProcess::Output() const {
  std::ifstream in(output_path_, std::ios::binary);
  in.seekg(output_offset_);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool ServerProcess::WaitForOutput(std::string_view needle,
                                  std::chrono::milliseconds timeout) {
  bool found = false;
  WaitUntil(
      [&] {
        const bool running = Running();
        found = Output().find(needle) != std::string::npos;
        return found || !running;
      },
      timeout);
  return found;
}

std::optional<std::string> ServerProcess::WaitForLine(
    const std::function<bool(std::string_view line)>& predicate,
    std::chrono::milliseconds timeout) {
  std::optional<std::string> match;
  WaitUntil(
      [&] {
        const bool running = Running();
        const std::string output = Output();
        size_t start = 0;
        for (size_t end; (end = output.find('\n', start)) != std::string::npos;
             start = end + 1) {
          const std::string_view line(output.data() + start, end - start);
          if (predicate(line)) {
            match = std::string(line);
            return true;
          }
        }
        return !running;
      },
      timeout);
  return match;
}

std::optional<std::string> ServerProcess::WaitForLineContaining(
    std::string_view needle, std::chrono::milliseconds timeout) {
  return WaitForLine(
      [needle](std::string_view line) {
        return line.find(needle) != std::string_view::npos;
      },
      timeout);
}

bool ServerProcess::Signal(int signal) {
  if (exit_status_.has_value()) return false;
  return kill(pid_, signal) == 0;
}

bool ServerProcess::TryReap() {
  if (exit_status_.has_value()) return true;
  int status = 0;
  pid_t r = 0;
  do {
    r = waitpid(pid_, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return false;
  ExitStatus exit;
  if (r < 0) {  // not our child any more; treat as gone
    exit.exited = false;
    exit.signal = 0;
  } else if (WIFEXITED(status)) {
    exit.exited = true;
    exit.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    exit.signal = WTERMSIG(status);
  }
  exit_status_ = exit;
  return true;
}

std::optional<ExitStatus> ServerProcess::WaitForExit(
    std::chrono::milliseconds timeout) {
  WaitUntil([this] { return TryReap(); }, timeout,
            std::chrono::milliseconds(5));
  return exit_status_;
}

bool ServerProcess::Running() { return !TryReap(); }

void ServerProcess::Kill() {
  if (exit_status_.has_value()) return;
  kill(pid_, SIGKILL);
  // SIGKILL cannot be caught; the bound only guards against a kernel hang.
  WaitForExit(std::chrono::seconds(30));
}

absl::Status ServerProcess::Stop(std::chrono::milliseconds timeout) {
  Signal(SIGTERM);
  const std::optional<ExitStatus> exit = WaitForExit(timeout);
  if (!exit.has_value()) {
    Kill();
    return absl::DeadlineExceededError(
        absl::StrCat("pid ", pid_, " did not stop within ", timeout.count(),
                     " ms of SIGTERM; killed"));
  }
  if (EndedCleanly(*exit, Output())) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("pid ", pid_, " ended with ", exit->ToString()));
}

bool EndedCleanly(const ExitStatus& exit, std::string_view output) {
  if (exit.ok()) return true;
  if (!IsLeakSanitizerTracerCrash(exit, output)) return false;
  fprintf(stderr,
          "note: a child stopped cleanly but LeakSanitizer's tracer crashed "
          "at its exit (a sanitizer runtime race); no leak check ran\n");
  return true;
}

bool IsLeakSanitizerTracerCrash(const ExitStatus& exit,
                                std::string_view output) {
  if (!exit.exited || exit.code != 1) return false;
  const size_t tracer = output.find("Tracer caught signal ");
  if (tracer == std::string_view::npos) return false;
  const size_t fatal =
      output.find("LeakSanitizer has encountered a fatal error", tracer);
  return fatal != std::string_view::npos &&
         output.find("LeakSanitizer: detected memory leaks") ==
             std::string_view::npos;
}

double ServerProcess::CpuSeconds() const {
  if (exit_status_.has_value()) return -1;
  std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return -1;
  // Fields after the parenthesised name start with field 3 (state); utime
  // and stime are fields 14 and 15.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  for (int i = 3; i < 14; ++i) fields >> field;
  unsigned long long utime = 0, stime = 0;
  if (!(fields >> utime >> stime)) return -1;
  return static_cast<double>(utime + stime) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::optional<std::string> LogField(std::string_view line,
                                    std::string_view key) {
  const std::string pattern = std::string(key) + "=";
  size_t pos = 0;
  // The key must start the line or follow a space.
  for (;; ++pos) {
    pos = line.find(pattern, pos);
    if (pos == std::string_view::npos) return std::nullopt;
    if (pos == 0 || line[pos - 1] == ' ') break;
  }
  std::string_view value = line.substr(pos + pattern.size());
  if (!value.empty() && value.front() == '"') {
    const size_t close = value.find('"', 1);
    if (close == std::string_view::npos) return std::nullopt;
    return std::string(value.substr(1, close - 1));
  }
  return std::string(value.substr(0, value.find(' ')));
}

absl::StatusOr<ListeningServer> StartListeningServer(
    ProcessOptions options, int port, std::chrono::milliseconds timeout) {
  const std::string binary = options.binary;
  options.env["KV_INDEXER_LISTEN_ADDR"] = absl::StrCat("127.0.0.1:", port);
  absl::StatusOr<std::unique_ptr<ServerProcess>> process =
      ServerProcess::Start(std::move(options));
  if (!process.ok()) return process.status();
  ListeningServer server;
  server.process = *std::move(process);
  const std::optional<std::string> line = server.process->WaitForLineContaining(
      "listening addr=127.0.0.1:", timeout);
  if (!line.has_value()) {
    const std::string reason =
        server.process->Running()
            ? absl::StrCat("did not log its address within ", timeout.count(),
                           " ms")
            : absl::StrCat("ended (",
                           server.process->WaitForExit({})->ToString(),
                           ") without listening");
    return absl::UnavailableError(absl::StrCat(
        binary, " ", reason, "; its output:\n", server.process->Output()));
  }
  server.address = LogField(*line, "addr").value_or("");
  server.port =
      std::atoi(server.address.substr(server.address.rfind(':') + 1).c_str());
  if (server.port <= 0) {
    return absl::InternalError(
        absl::StrCat(binary, " logged no usable address: ", *line));
  }
  return server;
}

}  // namespace kvindexer::test_support
