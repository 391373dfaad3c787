#include "durable/checkpoint_builder.h"

#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "common/env.h"
#include "common/log_setup.h"
#include "durable/file_io.h"
#include "spdlog/spdlog.h"

namespace kvindexer::durable {
namespace {

struct BuilderCall {
  std::string dir;
  CompactionJob job;
  pid_t parent = 0;
  BuildPriority priority = BuildPriority::kIdle;
};

// Arrays, not string_views: Debian's Abseil has a string_view of its own.
constexpr char kDir[] = "dir=";
constexpr char kBase[] = "base=";
constexpr char kLastWal[] = "last_wal=";
constexpr char kReserveBlocks[] = "reserve_blocks=";
constexpr char kParent[] = "parent=";
constexpr char kPriorityIdle[] = "priority=idle";
constexpr char kPriorityNormal[] = "priority=normal";

std::optional<uint64_t> Number(std::string_view arg, std::string_view key) {
  uint64_t value = 0;
  if (!arg.starts_with(key)) return std::nullopt;
  const std::string_view digits = arg.substr(key.size());
  // Digits only: SimpleAtoi would also take a sign or spaces.
  if (digits.empty() ||
      digits.find_first_not_of("0123456789") != std::string_view::npos ||
      !absl::SimpleAtoi(AbslView(digits), &value)) {
    return std::nullopt;
  }
  return value;
}

// Exactly the shape CheckpointBuilderCommand produces, in its order.
std::optional<BuilderCall> Parse(std::span<const char* const> args) {
  if (args.size() != 8 || args[1] != kCheckpointBuilderFlag) {
    return std::nullopt;
  }
  const std::string_view dir = args[2];
  const std::string_view dir_key = kDir;
  if (!dir.starts_with(dir_key) || dir.size() == dir_key.size()) {
    return std::nullopt;
  }
  const std::optional<uint64_t> base = Number(args[3], kBase);
  const std::optional<uint64_t> last_wal = Number(args[4], kLastWal);
  const std::optional<uint64_t> reserve = Number(args[5], kReserveBlocks);
  const std::optional<uint64_t> parent = Number(args[6], kParent);
  const std::optional<BuildPriority> priority = BuilderCallPriority(args);
  if (!base || !last_wal || !reserve || !parent || !priority ||
      *last_wal < *base || *parent == 0) {
    return std::nullopt;
  }
  BuilderCall call;
  call.dir = std::string(dir.substr(dir_key.size()));
  call.job.base = *base;
  call.job.last_wal = *last_wal;
  call.job.reserve_blocks = *reserve;
  call.parent = static_cast<pid_t>(*parent);
  call.priority = *priority;
  return call;
}

// Nice 19 first: it still applies if SCHED_IDLE is refused.
void LowerPriority() {
  if (setpriority(PRIO_PROCESS, 0, 19) != 0) {
    spdlog::warn("checkpoint builder keeps its nice value: {}",
                 std::strerror(errno));
  }
  sched_param param{};
  param.sched_priority = 0;
  if (sched_setscheduler(0, SCHED_IDLE, &param) != 0) {
    spdlog::warn("checkpoint builder runs without SCHED_IDLE: {}",
                 std::strerror(errno));
  }
}

// Under memory pressure the kernel should kill the builder, whose work is
// retried at the next rotation, before the server. Raising one's own score
// needs no privilege.
void VolunteerForTheOomKiller() {
  std::FILE* f = std::fopen("/proc/self/oom_score_adj", "w");
  bool ok = f != nullptr;
  if (ok) {
    ok = std::fputs("1000", f) >= 0;
    ok = std::fclose(f) == 0 && ok;
  }
  if (!ok) {
    spdlog::warn("checkpoint builder keeps its OOM score: {}",
                 std::strerror(errno));
  }
}

int Fail(const std::string& why) {
  std::fprintf(stdout, "%s\n", why.c_str());
  std::fflush(stdout);
  return kBuilderFailed;
}

}  // namespace

std::vector<std::string> CheckpointBuilderCommand(const std::string& dir,
                                                  const CompactionJob& job,
                                                  pid_t parent,
                                                  BuildPriority priority) {
  return {"kv-indexer-server",
          std::string(kCheckpointBuilderFlag),
          absl::StrCat(kDir, dir),
          absl::StrCat(kBase, job.base),
          absl::StrCat(kLastWal, job.last_wal),
          absl::StrCat(kReserveBlocks, job.reserve_blocks),
          absl::StrCat(kParent, parent),
          priority == BuildPriority::kIdle ? kPriorityIdle : kPriorityNormal};
}

std::optional<BuildPriority> BuilderCallPriority(
    std::span<const char* const> args) {
  if (args.size() < 8) return std::nullopt;
  const std::string_view arg = args[7];
  if (arg == kPriorityIdle) return BuildPriority::kIdle;
  if (arg == kPriorityNormal) return BuildPriority::kNormal;
  return std::nullopt;
}

bool IsCheckpointBuilderCall(std::span<const char* const> args) {
  return args.size() >= 2 && args[1] == kCheckpointBuilderFlag;
}

bool PrepareBuilderProcess(pid_t parent, BuildPriority priority) {
  // Only the server ends a build (SIGKILL, directly or as the parent-death
  // signal): a SIGTERM meant for the whole service (systemd signals every
  // process of its control group) must not make a clean shutdown look like
  // a failed checkpoint.
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) std::signal(sig, SIG_IGN);
  // The parent may have died before the signal was armed: then it never
  // comes, and nobody would publish what we build. The signal fires when
  // the thread that spawned us ends: the store's compaction thread, which
  // waits for us.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) {
    return false;
  }
  // What top shows: an exec of /proc/self/exe would be called "exe".
  prctl(PR_SET_NAME, "kvidx-ckpt", 0, 0, 0);
  if (priority == BuildPriority::kIdle) LowerPriority();
  VolunteerForTheOomKiller();
  return true;
}

int RunCheckpointBuilder(std::span<const char* const> args) {
  const std::optional<BuilderCall> call = Parse(args);
  if (!call) {
    std::fprintf(stderr,
                 "kv-indexer-checkpoint: usage: %s %s dir=<path> base=<g> "
                 "last_wal=<g> reserve_blocks=<n> parent=<pid> "
                 "priority=idle|normal\n",
                 args.empty() ? "kv-indexer-server" : args[0],
                 std::string(kCheckpointBuilderFlag).c_str());
    return kBuilderUsage;
  }
  // The server's format and level, each line marked as the builder's: they
  // share the server's standard error.
  const absl::StatusOr<spdlog::level::level_enum> level =
      LoadLogLevel(ProcessEnvironment());
  SetUpLogging("kv-indexer-checkpoint", level.ok() ? *level : kDefaultLogLevel);
  std::string pattern(kLogPattern);
  pattern.replace(pattern.rfind("%v"), 2,
                  absl::StrCat("checkpoint builder ", getpid(), ": %v"));
  spdlog::default_logger()->set_pattern(pattern,
                                        spdlog::pattern_time_type::utc);
  if (!PrepareBuilderProcess(call->parent, call->priority)) {
    return Fail(absl::StrCat("the server (pid ", call->parent,
                             ") that asked for this checkpoint is gone"));
  }
  // The server ends a build that runs too long; this one never stops itself.
  const BuildDeadline never;
  const absl::Status built =
      BuildCheckpoint(call->dir, call->job, &FileIo::Real(), never,
                      CheckpointFinish::kSealOnly);
  if (!built.ok()) return Fail(std::string(built.message()));
  return kBuilderSealed;
}

}  // namespace kvindexer::durable
