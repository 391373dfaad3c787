#include "durable/builder_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "durable/posix_file.h"

extern char** environ;

namespace kvindexer::durable {
namespace {

// What of the child's standard output goes into an error message.
constexpr size_t kMaxOutputBytes = 4096;

// posix_spawn's attribute and file-action objects, destroyed on every path.
struct SpawnSetup {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  SpawnSetup() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BuilderProcess>> BuilderProcess::Spawn(
    const std::string& executable, const std::vector<std::string>& argv) {
  if (argv.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no argv[0] to start ", executable, " with"));
  }
  auto failed = [&executable](const char* what, int err) {
    return absl::UnavailableError(absl::StrCat(
        "cannot start ", executable, ": ", what, ": ", ErrnoText(err)));
  };
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return failed("pipe", errno);
  UniqueFd read_end(pipe_fds[0]);
  UniqueFd write_end(pipe_fds[1]);

  SpawnSetup setup;
  // The server blocks SIGINT and SIGTERM in all its threads (they are
  // read by sigwait); the child starts with nothing blocked and every
  // signal at its default action, in a process group of its own, so that
  // a terminal's Ctrl-C reaches the server and not it.
  sigset_t none;
  sigemptyset(&none);
  sigset_t all;
  sigfillset(&all);
  int err = posix_spawnattr_setsigmask(&setup.attr, &none);
  if (err == 0) err = posix_spawnattr_setsigdefault(&setup.attr, &all);
  if (err == 0) {
    err = posix_spawnattr_setpgroup(&setup.attr, 0);
  }
  if (err == 0) {
    err = posix_spawnattr_setflags(&setup.attr, POSIX_SPAWN_SETSIGMASK |
                                                    POSIX_SPAWN_SETSIGDEF |
                                                    POSIX_SPAWN_SETPGROUP);
  }
  if (err == 0) {
    err = posix_spawn_file_actions_addopen(&setup.actions, STDIN_FILENO,
                                           "/dev/null", O_RDONLY, 0);
  }
  if (err == 0) {
    err = posix_spawn_file_actions_adddup2(&setup.actions, write_end.get(),
                                           STDOUT_FILENO);
  }
  // Descriptors without O_CLOEXEC (a library's) stay with the server.
  if (err == 0) {
    err = posix_spawn_file_actions_addclosefrom_np(&setup.actions,
                                                   STDERR_FILENO + 1);
  }
  if (err != 0) return failed("posix_spawn setup", err);

  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) {
    args.push_back(const_cast<char*>(arg.c_str()));
  }
  args.push_back(nullptr);
  pid_t pid = 0;
  err = posix_spawn(&pid, executable.c_str(), &setup.actions, &setup.attr,
                    args.data(), environ);
  if (err != 0) return failed("posix_spawn", err);
  return std::unique_ptr<BuilderProcess>(
      new BuilderProcess(pid, read_end.Release()));
}

BuilderProcess::~BuilderProcess() {
  if (!waited_) {
    Kill();
    Wait().IgnoreError();
  }
}

void BuilderProcess::Kill() {
  std::lock_guard<std::mutex> lock(mu_);
  // Until reaped, the PID stays ours (a zombie keeps it).
  if (!reaped_) ::kill(pid_, SIGKILL);
}

bool BuilderProcess::Ended() const {
  siginfo_t info{};
  int r = 0;
  do {
    r = ::waitid(P_PID, static_cast<id_t>(pid_), &info,
                 WEXITED | WNOWAIT | WNOHANG);
  } while (r != 0 && errno == EINTR);
  // An error (ECHILD) leaves nothing to wait for; the reap reports it.
  return r != 0 || info.si_pid == pid_;
}

absl::Status BuilderProcess::Wait(absl::FunctionRef<bool()> give_up) {
  waited_ = true;
  std::string output;
  UniqueFd out(output_fd_);
  output_fd_ = -1;
  // False at the end of the output (or an error): nothing more will come.
  auto read_some = [&out, &output]() {
    char buffer[1024];
    ssize_t n = 0;
    do {
      n = ::read(out.get(), buffer, sizeof(buffer));
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return false;
    if (output.size() < kMaxOutputBytes) {
      output.append(buffer, std::min(static_cast<size_t>(n),
                                     kMaxOutputBytes - output.size()));
    }
    return true;
  };
  // Readable once the child has ended; invalid on kernels before 5.3,
  // where the loop notices the end within kGiveUpPoll instead.
  // (Debian 12's <sys/pidfd.h> lacks C linkage: the system call itself.)
  const UniqueFd ended(static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0)));
  bool killed = false;
  // The end is checked without reaping, so that Kill never signals a PID
  // the system may already have given to another process.
  while (!Ended()) {
    if (!killed && give_up()) {
      Kill();
      killed = true;
    }
    pollfd fds[2];
    nfds_t count = 0;
    if (out.valid()) fds[count++] = pollfd{out.get(), POLLIN, 0};
    if (ended.valid()) fds[count++] = pollfd{ended.get(), POLLIN, 0};
    const int ready = ::poll(fds, count, static_cast<int>(kGiveUpPoll.count()));
    if (ready > 0 && out.valid() && fds[0].revents != 0 && !read_some()) {
      out.Reset();
    }
  }
  // What it wrote before it ended. A descendant that kept the pipe open
  // must not hold the wait: stop at the first read that would block.
  if (out.valid()) {
    const int flags = ::fcntl(out.get(), F_GETFL);
    if (flags >= 0 && ::fcntl(out.get(), F_SETFL, flags | O_NONBLOCK) == 0) {
      while (read_some()) {
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    reaped_ = true;
  }
  int status = 0;
  pid_t reaped = 0;
  do {
    reaped = ::waitpid(pid_, &status, 0);
  } while (reaped < 0 && errno == EINTR);
  if (reaped != pid_) {
    return absl::InternalError(
        absl::StrCat("cannot reap process ", pid_, ": ", ErrnoText(errno)));
  }
  if (WIFEXITED(status)) exit_code_ = WEXITSTATUS(status);
  if (exit_code_ == 0) return absl::OkStatus();
  std::string how =
      WIFEXITED(status)
          ? absl::StrCat("exited with status ", WEXITSTATUS(status))
          : absl::StrCat("was killed by signal ", WTERMSIG(status));
  const absl::string_view said = absl::StripAsciiWhitespace(output);
  if (!said.empty()) absl::StrAppend(&how, ": ", said);
  return absl::InternalError(absl::StrCat("builder process ", pid_, " ", how));
}

}  // namespace kvindexer::durable
