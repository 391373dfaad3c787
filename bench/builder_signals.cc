#include "builder_signals.h"

#include <dirent.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace kvindexer::bench {

namespace {

// The state letter and parent of `pid` from /proc/<pid>/stat; false when
// it is gone.
bool ReadStat(pid_t pid, char* state, pid_t* parent) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(stat.substr(close + 1));
  return static_cast<bool>(fields >> *state >> *parent);
}

}  // namespace

pid_t ParentOf(pid_t pid) {
  char state = 0;
  pid_t parent = 0;
  return ReadStat(pid, &state, &parent) ? parent : 0;
}

std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  // Each thread's list of the children it started: a few small reads,
  // where a scan of /proc reads every process's stat.
  const std::string tasks = "/proc/" + std::to_string(parent) + "/task";
  if (DIR* dir = ::opendir(tasks.c_str()); dir != nullptr) {
    bool listed = false;
    while (const dirent* entry = ::readdir(dir)) {
      if (entry->d_name[0] == '.') continue;
      std::ifstream in(tasks + "/" + entry->d_name + "/children");
      if (!in) continue;
      listed = true;
      pid_t child = 0;
      while (in >> child) children.push_back(child);
    }
    ::closedir(dir);
    if (listed) return children;
  }
  // A kernel without those lists (CONFIG_PROC_CHILDREN).
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return children;
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    if (ParentOf(static_cast<pid_t>(pid)) == parent) {
      children.push_back(static_cast<pid_t>(pid));
    }
  }
  ::closedir(proc);
  return children;
}

bool SignalBuilder(pid_t builder, pid_t server, int signal) {
  return ParentOf(builder) == server && ::kill(builder, signal) == 0;
}

BuilderStall::~BuilderStall() {
  for (const Stopped& s : stopped_) {
    if (s.pidfd < 0) continue;  // its parent-death signal ends it
    // Through the pidfd: the process may have been reparented, or have
    // ended and its PID been reused, since it was stopped.
    ::syscall(SYS_pidfd_send_signal, s.pidfd, SIGKILL, nullptr, 0);
    ::close(s.pidfd);
  }
}

void BuilderStall::StopNew() {
  for (const pid_t child : ChildrenOf(server_)) {
    if (std::any_of(stopped_.begin(), stopped_.end(),
                    [&](const Stopped& s) { return s.pid == child; })) {
      continue;
    }
    // The pidfd first, then the parent check: a pidfd taken after the
    // check could name a process that took a reaped builder's PID.
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
    if (pidfd < 0 && errno == ESRCH) continue;  // already gone
    char state = 0;
    pid_t parent = 0;
    // An exited builder the server has not reaped yet holds nothing.
    const bool running =
        ReadStat(child, &state, &parent) && parent == server_ && state != 'Z';
    bool stopped = false;
    if (running) {
      stopped = pidfd >= 0
                    ? ::syscall(SYS_pidfd_send_signal, pidfd, SIGSTOP, nullptr,
                                0) == 0
                    // No pidfd here (a kernel before 5.3, or a filter that
                    // refuses it): by PID, as the paired measurement does.
                    : ::kill(child, SIGSTOP) == 0;
    }
    if (!stopped) {
      if (pidfd >= 0) ::close(pidfd);
      continue;
    }
    stopped_.push_back({child, pidfd});
  }
}

}  // namespace kvindexer::bench
