// RunWorkerRemoval: one backend through the phases of
// kv-indexer-worker-removal-bench, in the calling process:
//   loaded -> filled (all workers, then one counting Match so that hit
//   counters exist) -> removed (`remove` workers, one RemoveWorker each) ->
//   re-added (as many replacements, same shape, new ids),
// sampling RSS (VmRSS of /proc/self/status) and GetStats after each phase,
// and again after malloc_trim(0). Checks GetStats' workers, placements and
// blocks against the fleet after every phase, and which ordinals the
// replacements received.
//
// RunSurvivorsOnly is the yardstick: a fresh backend loaded with only the
// workers the removal leaves (and the same counting Match over them).
//
// Thread safety: none. The caller runs one backend per process, so that
// what one backend leaves on the heap does not count against the next.
#ifndef KVINDEXER_BENCH_WORKER_REMOVAL_RUN_H_
#define KVINDEXER_BENCH_WORKER_REMOVAL_RUN_H_

#include <cstdint>
#include <string>

#include "worker_removal_fleet.h"

namespace kvindexer::bench {

enum class RunOutcome {
  kOk,
  kRemoveFailed,  // RemoveWorker failed or is missing (ABI 1.0); the
                  // phases before it were measured
  kFailed,        // loading, filling or a count check failed
};

struct RunResult {
  RunOutcome outcome = RunOutcome::kFailed;
  std::string json;  // one JSON object describing the run
};

// Prints the figures as a table on stdout and errors on stderr.
RunResult RunWorkerRemoval(const std::string& backend, const FleetShape& shape);
RunResult RunSurvivorsOnly(const std::string& backend, const FleetShape& shape);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_WORKER_REMOVAL_RUN_H_
