#include "server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"

extern char** environ;

namespace kvindexer::bench {
namespace {

constexpr int kStartAttempts = 3;

absl::StatusOr<int> ProbeFreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError(std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int err = errno;
    ::close(fd);
    return absl::InternalError(
        absl::StrCat("probing a free port: ", std::strerror(err)));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Returns true and the status once the child has exited.
bool Reap(pid_t pid, int* wstatus) {
  return ::waitpid(pid, wstatus, WNOHANG) == pid;
}

// Waits up to `timeout` for the child to exit and reaps it. Blocks on a
// pidfd when the kernel has them; otherwise polls waitpid in short steps.
bool WaitForExit(pid_t pid, absl::Duration timeout, int* wstatus) {
  const auto give_up =
      std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  while (!Reap(pid, wstatus)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        give_up - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      if (pidfd >= 0) ::close(pidfd);
      return false;
    }
    if (pidfd >= 0) {
      pollfd p{pidfd, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(left.count()) + 1);
    } else {
      std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(5)));
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(
    const std::string& binary, const std::vector<std::string>& env,
    const std::string& log_path, absl::Duration ready_timeout) {
  if (::access(binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(
        absl::StrCat("server binary ", binary, " is not executable"));
  }
  absl::Status last = absl::UnavailableError("not started");
  for (int attempt = 0; attempt < kStartAttempts; ++attempt) {
    absl::StatusOr<int> port = ProbeFreePort();
    if (!port.ok()) return port.status();
    const std::string address = absl::StrCat("127.0.0.1:", *port);

    std::vector<std::string> overrides = env;
    overrides.push_back("KV_INDEXER_LISTEN_ADDR=" + address);
    std::vector<std::string> child_env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry(*e);
      const std::string name = entry.substr(0, entry.find('='));
      bool replaced = false;
      for (const std::string& o : overrides) {
        if (o.substr(0, o.find('=')) == name) replaced = true;
      }
      if (!replaced) child_env.push_back(entry);
    }
    child_env.insert(child_env.end(), overrides.begin(), overrides.end());
    std::vector<char*> envp;
    for (std::string& e : child_env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string arg0 = binary;
    char* argv[] = {arg0.data(), nullptr};

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv,
                                 envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      return absl::InternalError(
          absl::StrCat("posix_spawn ", binary, ": ", std::strerror(rc)));
    }

    std::unique_ptr<ServerProcess> proc(new ServerProcess);
    proc->pid_ = pid;
    proc->address_ = address;
    auto channel =
        grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
    const auto give_up = std::chrono::steady_clock::now() +
                         absl::ToChronoNanoseconds(ready_timeout);
    bool exited = false;
    while (std::chrono::steady_clock::now() < give_up) {
      int wstatus = 0;
      if (Reap(pid, &wstatus)) {
        exited = true;
        proc->pid_ = -1;
        last = absl::UnavailableError(absl::StrCat(
            binary, " exited before accepting connections (status ", wstatus,
            "); see ", log_path));
        break;
      }
      if (channel->WaitForConnected(std::chrono::system_clock::now() +
                                    std::chrono::milliseconds(200))) {
        return proc;
      }
    }
    if (!exited) {
      (void)proc->Stop(absl::Seconds(5));
      return absl::DeadlineExceededError(
          absl::StrCat(binary, " did not accept connections on ", address,
                       " within ", absl::FormatDuration(ready_timeout)));
    }
  }
  return last;
}

ServerProcess::~ServerProcess() { (void)Stop(absl::Seconds(10)); }

absl::Status ServerProcess::Stop(absl::Duration timeout) {
  if (pid_ < 0) return absl::OkStatus();
  ::kill(pid_, SIGTERM);
  int wstatus = 0;
  if (WaitForExit(pid_, timeout, &wstatus)) {
    pid_ = -1;
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
      return absl::OkStatus();
    }
    return absl::InternalError(
        absl::StrCat("server exited with wait status ", wstatus));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &wstatus, 0);
  pid_ = -1;
  return absl::DeadlineExceededError("server did not stop on SIGTERM");
}

double ServerProcess::CpuSeconds() const {
  if (pid_ <= 0) return -1;
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

}  // namespace kvindexer::bench
