// Prefix-query latency beside a stand-in for a checkpoint builder: a
// process at the builder's priority (SCHED_IDLE, nice 19; or nice 19
// only, to compare) that loads the
// machine in one way only, paused and running in alternating slices as
// checkpoint-paired does with the real builder
// (durability_checkpoint_paired.h). It tells which of what a build does
// costs the queries on a given machine:
//
//   spin    arithmetic in registers: CPU time, nothing else;
//   random  read-modify-writes at random places of a large array (as many
//           bytes as a build's image): cache, TLB and memory latency, as a
//           build's hash-map inserts;
//   stream  sequential copies through that array: memory bandwidth, as a
//           build's reading and writing of checkpoint parts.
#ifndef KVINDEXER_BENCH_DURABILITY_INTERFERER_H_
#define KVINDEXER_BENCH_DURABILITY_INTERFERER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bench_report.h"
#include "durability_checkpoint_paired.h"
#include "durability_rig.h"

namespace kvindexer::bench {

// argv[1] of an interferer process: "--kvindexer-bench-interferer".
inline constexpr std::string_view kInterfererFlag =
    "--kvindexer-bench-interferer";

// The interferer's main, for `args` = {argv0, kInterfererFlag, kind, mb,
// sched}: lowers its priority (sched "idle": SCHED_IDLE at nice 19, as the
// builder; "nice": nice 19 only) and loads the machine until killed.
// Returns 2 for a malformed call.
int RunInterferer(int argc, char** argv);

struct InterfererOptions {
  std::string kind;  // spin, random or stream
  uint64_t mb = 600;
  std::string sched = "idle";  // idle (SCHED_IDLE, nice 19) or nice (19)
  PairedSliceLoad load;
  uint32_t pairs = 10;
  // Fewer pairs with answers in both slices is an error.
  uint32_t min_pairs = 0;
};

// Starts the interferer (this executable again), lets it fill its array,
// then runs `pairs` pairs of slices, paused first in even pairs; kills it.
[[nodiscard]] absl::StatusOr<PairedCheckpointFigures> MeasurePairedInterferer(
    DurabilityRig& rig,
    const std::vector<v1::MatchExternalKvPrefixRequest>& queries,
    const InterfererOptions& options, Report* report);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_DURABILITY_INTERFERER_H_
