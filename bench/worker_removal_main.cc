// kv-indexer-worker-removal-bench: how much memory a backend gives back when
// workers are removed (IndexBackend::RemoveWorker, ABI 1.1), and whether
// replacements of the same shape, on the freed ordinals, keep it flat.
//
// Each backend runs in a child process of its own (fork), so the RSS figures
// start from a fresh heap; with --survivors_only_too (the default), a second
// child loads only the workers the removal leaves, the yardstick for what the
// removal should have come down to. The fleet and the phases are described in
// worker_removal_fleet.h and worker_removal_run.h; BENCHMARKS.md ("Worker
// removal: memory returned") has the command and the figures.
//
// A backend whose RemoveWorker fails (or that predates ABI 1.1) gets an
// ERROR line naming the failure, and the next backend runs. Exit status: 0
// when every backend completed, or failed only in RemoveWorker and is listed
// in --allow_remove_error; 1 otherwise.
//
// Environment: KV_INDEXER_BACKEND_PATH, extra plugin directories for the
// loader (backends are found by name next to the executable otherwise).
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "worker_removal_fleet.h"
#include "worker_removal_run.h"

ABSL_FLAG(std::string, backends, "absl_rwlock,robin_sharded_snapshot",
          "Backends to measure, by name or path, comma-separated");
ABSL_FLAG(uint64_t, placements, 10'000'000,
          "Placements of the whole fleet (split evenly over the workers)");
ABSL_FLAG(uint32_t, workers, 64, "Workers in the fleet");
ABSL_FLAG(uint32_t, groups, 8, "Groups of workers sharing group blocks");
ABSL_FLAG(uint32_t, shared_blocks, 4096, "Blocks every worker holds at HBM");
ABSL_FLAG(uint32_t, group_blocks, 32768,
          "Blocks every member of a group holds at HBM");
ABSL_FLAG(uint32_t, remove, 32,
          "Workers removed (every other one) and then replaced");
ABSL_FLAG(uint32_t, hit_blocks, 1024,
          "Private blocks per worker a counting Match visits");
ABSL_FLAG(std::string, allow_remove_error, "",
          "Backends (comma-separated, as named in --backends) whose failing "
          "RemoveWorker does not make the exit status 1");
ABSL_FLAG(bool, survivors_only_too, true,
          "Also measure a fresh backend loaded with only the workers the "
          "removal leaves");
ABSL_FLAG(std::string, json_out, "", "Also write the results to this file");

namespace kvindexer::bench {
namespace {

// Runs `run` for one backend in a child process; returns its outcome and
// JSON.
using RunFn = RunResult (*)(const std::string&, const FleetShape&);
RunResult RunInChild(RunFn run, const std::string& backend,
                     const FleetShape& shape) {
  RunResult failed;
  failed.outcome = RunOutcome::kFailed;
  int fds[2];
  if (pipe(fds) != 0) {
    std::perror("pipe");
    return failed;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    return failed;
  }
  if (pid == 0) {
    close(fds[0]);
    const RunResult result = run(backend, shape);
    std::fflush(stdout);
    std::fflush(stderr);
    size_t written = 0;
    while (written < result.json.size()) {
      const ssize_t n = write(fds[1], result.json.data() + written,
                              result.json.size() - written);
      if (n <= 0) break;
      written += static_cast<size_t>(n);
    }
    close(fds[1]);
    _exit(static_cast<int>(result.outcome));
  }
  close(fds[1]);
  std::string json;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    json.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status)) {
    std::fprintf(stderr, "ERROR %s: the measuring process died (status %d)\n",
                 backend.c_str(), status);
    return failed;
  }
  RunResult result;
  result.json = json;
  switch (WEXITSTATUS(status)) {
    case static_cast<int>(RunOutcome::kOk):
      result.outcome = RunOutcome::kOk;
      break;
    case static_cast<int>(RunOutcome::kRemoveFailed):
      result.outcome = RunOutcome::kRemoveFailed;
      break;
    default:
      result.outcome = RunOutcome::kFailed;
  }
  return result;
}

int Main() {
  FleetShape shape;
  shape.placements = absl::GetFlag(FLAGS_placements);
  shape.workers = absl::GetFlag(FLAGS_workers);
  shape.groups = absl::GetFlag(FLAGS_groups);
  shape.shared_blocks = absl::GetFlag(FLAGS_shared_blocks);
  shape.group_blocks = absl::GetFlag(FLAGS_group_blocks);
  shape.remove = absl::GetFlag(FLAGS_remove);
  shape.hit_blocks = absl::GetFlag(FLAGS_hit_blocks);
  if (absl::Status s = WorkerRemovalFleet::Check(shape); !s.ok()) {
    std::fprintf(stderr, "ERROR: %s\n", s.ToString().c_str());
    return 1;
  }
  const WorkerRemovalFleet fleet(shape);
  std::printf(
      "fleet: %u workers x %llu placements = %llu; each worker: %u shared "
      "blocks (all workers) + %u group blocks (%u groups of %u) + %llu "
      "private blocks (6/8 HBM, 1/8 DRAM, 1/8 SSD); remove %u (every other "
      "worker), then add %u replacements on new ids\n",
      shape.workers,
      static_cast<unsigned long long>(fleet.placements_per_worker()),
      static_cast<unsigned long long>(fleet.placements_per_worker() *
                                      shape.workers),
      shape.shared_blocks, shape.group_blocks, shape.groups,
      shape.workers / shape.groups,
      static_cast<unsigned long long>(fleet.private_blocks()), shape.remove,
      shape.remove);

  const std::set<std::string> lenient = absl::StrSplit(
      absl::GetFlag(FLAGS_allow_remove_error), ',', absl::SkipEmpty());
  bool ok = true;
  std::vector<std::string> json;
  const std::vector<std::string> backends =
      absl::StrSplit(absl::GetFlag(FLAGS_backends), ',', absl::SkipEmpty());
  for (const std::string& backend : backends) {
    const RunResult result = RunInChild(RunWorkerRemoval, backend, shape);
    if (!result.json.empty()) json.push_back(result.json);
    if (result.outcome == RunOutcome::kFailed ||
        (result.outcome == RunOutcome::kRemoveFailed &&
         lenient.count(backend) == 0)) {
      ok = false;
    }
    if (!absl::GetFlag(FLAGS_survivors_only_too)) continue;
    const RunResult yardstick = RunInChild(RunSurvivorsOnly, backend, shape);
    if (!yardstick.json.empty()) json.push_back(yardstick.json);
    if (yardstick.outcome != RunOutcome::kOk) ok = false;
  }
  const std::string path = absl::GetFlag(FLAGS_json_out);
  if (!path.empty()) {
    std::ofstream out(path);
    out << "[" << absl::StrJoin(json, ",") << "]\n";
    if (!out) {
      std::fprintf(stderr, "ERROR: cannot write %s\n", path.c_str());
      ok = false;
    }
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace kvindexer::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return kvindexer::bench::Main();
}
