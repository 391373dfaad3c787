#include "builder_signals.h"

#include <dirent.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace kvindexer::bench {

pid_t ParentOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 1));
  char state = 0;
  pid_t ppid = 0;
  if (!(fields >> state >> ppid)) return 0;
  return ppid;
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
    if (pidfd < 0) continue;  // already gone
    if (ParentOf(child) != server_ ||
        ::syscall(SYS_pidfd_send_signal, pidfd, SIGSTOP, nullptr, 0) != 0) {
      ::close(pidfd);
      continue;
    }
    stopped_.push_back({child, pidfd});
  }
}

}  // namespace kvindexer::bench
