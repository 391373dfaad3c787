#include "durability_interferer.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "absl/strings/str_format.h"

extern char** environ;

namespace kvindexer::bench {
namespace {

// nice 19, and SCHED_IDLE unless `nice_only`.
void LowerPriority(bool nice_only) {
  setpriority(PRIO_PROCESS, 0, 19);
  if (nice_only) return;
  sched_param param{};
  sched_setscheduler(0, SCHED_IDLE, &param);
}

// Where Spin's results go, so that the compiler keeps the arithmetic.
volatile uint64_t g_spin_sink = 0;

[[noreturn]] void Spin() {
  uint64_t x = 88172645463325252ull;
  while (true) {
    for (int i = 0; i < 1 << 20; ++i) x = x * 6364136223846793005ull + 1;
    g_spin_sink = x;
  }
}

[[noreturn]] void Random(uint64_t* words, size_t n) {
  uint64_t x = 88172645463325252ull;
  while (true) {
    // xorshift64: the next place is not predictable, as a hash's slot.
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    words[x % n] += x;
  }
}

[[noreturn]] void Stream(uint64_t* words, size_t n) {
  const size_t half = n / 2;
  while (true) {
    std::memcpy(words + half, words, half * sizeof(uint64_t));
    std::memcpy(words, words + half, half * sizeof(uint64_t));
  }
}

// Waits for the one byte the interferer writes to its standard output (our
// pipe) once its array is in memory, so that no slice measures its page
// faults.
bool WaitReady(int fd) {
  char byte = 0;
  return ::read(fd, &byte, 1) == 1;
}

}  // namespace

int RunInterferer(int argc, char** argv) {
  if (argc != 5 || std::string_view(argv[1]) != kInterfererFlag) return 2;
  const std::string_view kind = argv[2];
  const uint64_t mb = std::strtoull(argv[3], nullptr, 10);
  const std::string_view sched = argv[4];
  if (kind != "spin" && kind != "random" && kind != "stream") return 2;
  if (sched != "idle" && sched != "nice") return 2;
  // Dies with the bench, however the bench ends (it may hold us stopped).
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() == 1) return 1;
  LowerPriority(sched == "nice");
  const size_t n = static_cast<size_t>(mb) * (1 << 20) / sizeof(uint64_t);
  std::unique_ptr<uint64_t[]> words;
  if (kind != "spin") {
    words = std::make_unique<uint64_t[]>(n);  // zero-filled: every page touched
    for (size_t i = 0; i < n; i += 512) words[i] = i;
  }
  // Ready: standard output is the bench's pipe.
  if (::write(STDOUT_FILENO, "r", 1) != 1) return 1;
  if (kind == "spin") Spin();
  if (kind == "random") Random(words.get(), n);
  Stream(words.get(), n);
}

absl::StatusOr<PairedCheckpointFigures> MeasurePairedInterferer(
    DurabilityRig& rig,
    const std::vector<v1::MatchExternalKvPrefixRequest>& queries,
    const InterfererOptions& options, Report* report) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return absl::InternalError("pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  const std::string mb = std::to_string(options.mb);
  std::string self = "/proc/self/exe";
  std::string flag(kInterfererFlag);
  std::string kind = options.kind;
  std::string sched = options.sched;
  char* args[] = {self.data(),  flag.data(),
                  kind.data(),  const_cast<char*>(mb.c_str()),
                  sched.data(), nullptr};
  pid_t pid = 0;
  const int err =
      posix_spawn(&pid, self.c_str(), &actions, nullptr, args, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (err != 0) {
    ::close(pipe_fds[0]);
    return absl::InternalError(absl::StrFormat("posix_spawn: %d", err));
  }
  const bool ready = WaitReady(pipe_fds[0]);
  ::close(pipe_fds[0]);
  const auto finish = [pid] {
    ::kill(pid, SIGCONT);
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
  };
  if (!ready) {
    finish();
    return absl::InternalError("the interferer did not start");
  }
  std::fprintf(stderr, "== interferer %s (%llu MB), pid %d, %u pairs\n",
               options.kind.c_str(),
               static_cast<unsigned long long>(options.mb), pid, options.pairs);
  PairedCheckpointFigures figures;
  figures.qps = options.load.qps;
  const std::string name = "queries/" + options.kind + "-" + options.sched;
  const std::string at = absl::StrFormat("@%.0fqps", options.load.qps);
  const auto slice = [&](const std::string& label) {
    return RunPairedSlice(rig, queries, options.load, name + label);
  };
  for (uint32_t pair = 0; pair < options.pairs; ++pair) {
    QueryResult paused;
    QueryResult running;
    if (pair % 2 == 0) {
      ::kill(pid, SIGSTOP);
      paused = slice("-paused");
      ::kill(pid, SIGCONT);
      running = slice("-running");
    } else {
      running = slice("-running");
      ::kill(pid, SIGSTOP);
      paused = slice("-paused");
      ::kill(pid, SIGCONT);
    }
    WriteQuery(*report, "wal-always", name + "-paused" + at, paused);
    WriteQuery(*report, "wal-always", name + "-running" + at, running);
    figures.failed_queries += paused.status.failed() + running.status.failed();
    if (paused.latency.count > 0 && running.latency.count > 0) {
      figures.paused_p99_us.push_back(paused.latency.p99_us);
      figures.running_p99_us.push_back(running.latency.p99_us);
      figures.ratios.push_back(running.latency.p99_us / paused.latency.p99_us);
    }
  }
  finish();
  if (figures.ratios.size() < options.min_pairs) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "interferer %s: %zu pairs of slices, fewer than the %u asked for",
        options.kind, figures.ratios.size(), options.min_pairs));
  }
  return figures;
}

}  // namespace kvindexer::bench
