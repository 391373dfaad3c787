// A checkpoint build in a process of its own (docs/durability.md,
// "Checkpoints"). The server runs its own executable again with
// kCheckpointBuilderFlag first: that process builds the next checkpoint from
// the files (durable/compactor.h), seals it as checkpoint-<g>.ckpt.tmp and
// exits; the server, which alone owns the data directory, publishes it.
//
// Why a process and not a thread: a build allocates, faults in and frees
// hundreds of megabytes. In a thread of the server that traffic shares the
// server's address-space lock and allocator with the query threads, so it
// could only run at a low nice value (a SCHED_IDLE thread holding one of
// those locks stalled queries). A process of its own shares neither and runs
// as SCHED_IDLE: it gets the CPU time the server leaves unused, and nothing
// the server waits for.
#ifndef KVINDEXER_DURABLE_CHECKPOINT_BUILDER_H_
#define KVINDEXER_DURABLE_CHECKPOINT_BUILDER_H_

#include <sys/types.h>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "durable/compactor.h"

namespace kvindexer::durable {

inline constexpr std::string_view kCheckpointBuilderFlag =
    "--kvindexer-build-checkpoint";

// Exit codes of RunCheckpointBuilder.
inline constexpr int kBuilderSealed = 0;  // checkpoint-<target>.ckpt.tmp sealed
inline constexpr int kBuilderFailed = 1;  // the reason went to standard output
inline constexpr int kBuilderUsage = 2;   // a malformed command line

// The CPU priority a builder process gives itself as it starts. kIdle is
// every build's; kNormal is for a build that writes already wait for when
// the server cannot raise an idle one (that needs CAP_SYS_NICE, while a
// process that never lowered itself needs nothing).
enum class BuildPriority { kIdle, kNormal };

// The argv (argv[0] is "kv-indexer-server", what ps shows) that builds
// `job` (its `sizes` is not used: reserve_blocks is) in `dir`, for a parent
// `parent`, at `priority`.
std::vector<std::string> CheckpointBuilderCommand(
    const std::string& dir, const CompactionJob& job, pid_t parent,
    BuildPriority priority = BuildPriority::kIdle);

// The priority= argument of a builder call (args[7]); nullopt when it is
// missing or malformed.
std::optional<BuildPriority> BuilderCallPriority(
    std::span<const char* const> args);

// True when `args` (argv) is a command line of CheckpointBuilderCommand.
bool IsCheckpointBuilderCall(std::span<const char* const> args);

// What a builder process does to itself before it builds: it ignores
// SIGTERM, SIGINT and SIGHUP (the server ends it with SIGKILL), dies with
// its parent (PR_SET_PDEATHSIG, armed for the spawning thread), names
// itself kvidx-ckpt, lowers itself to SCHED_IDLE at nice 19 when `priority`
// is kIdle and raises its OOM score to the maximum (the kernel kills it
// before the server). False when `parent` is already gone.
bool PrepareBuilderProcess(pid_t parent, BuildPriority priority);

// The builder's main: PrepareBuilderProcess (exit 1 at once when the parent
// is gone), then a build with CheckpointFinish::kSealOnly; on failure it
// writes one line saying why to standard output. Logs go to standard error.
int RunCheckpointBuilder(std::span<const char* const> args);

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_CHECKPOINT_BUILDER_H_
