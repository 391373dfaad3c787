// The ingest side of kv-indexer-durability-bench: the same plan of
// maximum-size applies against a fresh server in each durability mode, in
// rounds (the mode order rotates per round, so drifting background load
// falls on every mode alike; between runs the previous run's files are
// deleted and sync(2) flushes what they left dirty); and the preload of a
// large index.
#ifndef KVINDEXER_BENCH_DURABILITY_INGEST_H_
#define KVINDEXER_BENCH_DURABILITY_INGEST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bench_report.h"
#include "durability_rig.h"
#include "load_client.h"
#include "synthetic_fleet.h"

namespace kvindexer::bench {

struct IngestComparisonOptions {
  uint32_t rounds = 3;
  std::string data_root;  // fresh data directories are made under it
  IngestLoad load;        // label, stop and cycle are set per run
};

struct IngestModeFigures {
  DurabilityMode mode = DurabilityMode::kOff;
  std::vector<double> hashes_per_s;   // one per round
  std::vector<double> p99_us;         // apply latency, one per round
  std::vector<uint64_t> dir_bytes;    // the data directory after the run
  std::vector<uint32_t> checkpoints;  // checkpoint files after the run
};

// Figures per mode, in the order off, none, always. Each run gets a fresh
// server (and data directory); `plan` is applied once per run. Rows go to
// `report` under "ingest/<mode>".
[[nodiscard]] absl::StatusOr<std::vector<IngestModeFigures>> CompareIngest(
    const RigOptions& rig_options, const IngestComparisonOptions& options,
    const IngestPlan& plan, Report* report);

// Applies fleet traffic to `pool` until the fleet holds `placements`
// placements (anchors first), generating it in chunks so that memory stays
// bounded. Returns the totals as one result.
[[nodiscard]] IngestResult PreloadFleet(SyntheticFleet* fleet,
                                        ChannelPool* pool, uint64_t placements,
                                        const IngestLoad& load);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_DURABILITY_INGEST_H_
