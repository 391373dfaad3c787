// The checkpoint builder of the durable tests: what kv-indexer-server's
// main does with a builder call (durable/checkpoint_builder.h), plus two
// faults that a test switches on with a file in the data directory:
//
//   test-hold  prepares itself as a real builder does
//              (PrepareBuilderProcess), creates the checkpoint's temporary
//              file, writes our PID to test-hold.pid and waits to be killed
//              (dying with the parent, and after 120 s at most), so that a
//              test can catch a build in progress;
//   test-hold-idle
//              holds as test-hold does when called at idle priority and
//              builds as usual at normal priority: an idle build starved of
//              CPU for as long as the test likes;
//   test-fail  builds and seals as usual, then exits 1, so that a test sees
//              a failure that leaves a sealed file behind.
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <span>
#include <string>
#include <string_view>

#include "durable/checkpoint_builder.h"
#include "durable/checkpoint_file.h"

namespace {

using kvindexer::durable::BuilderCallPriority;
using kvindexer::durable::BuildPriority;
using kvindexer::durable::CheckpointTmpPath;
using kvindexer::durable::IsCheckpointBuilderCall;
using kvindexer::durable::PrepareBuilderProcess;
using kvindexer::durable::RunCheckpointBuilder;

[[noreturn]] void Hold(const std::string& dir, uint64_t target,
                       BuildPriority priority) {
  if (!PrepareBuilderProcess(getppid(), priority)) std::exit(1);
  alarm(120);
  std::ofstream(CheckpointTmpPath(dir, target)) << "half a checkpoint";
  const std::string pid_file = dir + "/test-hold.pid";
  std::ofstream(pid_file + ".part") << getpid() << "\n";
  // Renamed whole, so that a reader never sees half a PID.
  std::rename((pid_file + ".part").c_str(), pid_file.c_str());
  while (true) pause();
}

}  // namespace

int main(int argc, char** argv) {
  const std::span<const char* const> args(const_cast<const char* const*>(argv),
                                          static_cast<size_t>(argc));
  // The shape CheckpointBuilderCommand gives: dir= is args[2], last_wal=
  // args[4]. Anything else goes to the real parser as it is.
  if (!IsCheckpointBuilderCall(args) || args.size() < 5) {
    return RunCheckpointBuilder(args);
  }
  const std::string dir =
      std::string(args[2]).substr(std::string_view("dir=").size());
  const uint64_t last_wal = std::strtoull(
      args[4] + std::string_view("last_wal=").size(), nullptr, 10);
  const auto present = [&dir](const char* name) {
    return ::access((dir + "/" + name).c_str(), F_OK) == 0;
  };
  const BuildPriority priority =
      BuilderCallPriority(args).value_or(BuildPriority::kIdle);
  if (present("test-hold") ||
      (present("test-hold-idle") && priority == BuildPriority::kIdle)) {
    Hold(dir, last_wal + 1, priority);
  }
  const int code = RunCheckpointBuilder(args);
  if (code == 0 && present("test-fail")) {
    std::printf("test: failing after the seal\n");
    return 1;
  }
  return code;
}
