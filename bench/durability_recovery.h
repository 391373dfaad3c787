// Restart of a loaded server on its data directory: what the directory
// holds, how long recovery takes (the server's own figure and the time from
// spawning the process to its "listening" line) and whether the index
// answers the fleet's headline query as before.
#ifndef KVINDEXER_BENCH_DURABILITY_RECOVERY_H_
#define KVINDEXER_BENCH_DURABILITY_RECOVERY_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "durability_rig.h"
#include "load_client.h"

namespace kvindexer::bench {

struct RestartFigures {
  std::string how;  // "sigterm" or "sigkill"
  DirUsage dir;     // after the old server ended
  RecoveredLine recovered;
  double seconds_to_listen = 0;
  bool headline_ok = false;  // every worker matches the whole anchor prefix
};

struct HeadlineCheck {
  v1::MatchExternalKvPrefixRequest query;
  uint32_t workers = 0;        // workers that must match
  uint32_t prefix_blocks = 0;  // each one over this many blocks
};

// Ends `*rig` (SIGTERM, or SIGKILL when `kill`), starts a new wal-always
// server on `data_dir` in its place and checks it.
[[nodiscard]] absl::StatusOr<RestartFigures> MeasureRestart(
    std::unique_ptr<DurabilityRig>* rig, const RigOptions& rig_options,
    const std::string& data_dir, bool kill, const HeadlineCheck& headline);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_DURABILITY_RECOVERY_H_
