// Phase "catch-up" of kv-indexer-fleet-bench: how long a replica that
// starts takes to hold the whole fleet (docs/fleet.md, "Snapshots"). On a
// log written beforehand, a first replica starts with no snapshot and reads
// the whole log; it also holds the snapshot lease and writes a snapshot at
// the log's end. Once that snapshot exists the first replica stops and a
// fresh one starts from it. For each start: from spawning the process to
// its "listening" line (a snapshot is loaded before it), to grpc.health.v1
// SERVING, and to kvindexer_fleet_applied_position = the log's last
// position.
#ifndef KVINDEXER_BENCH_FLEET_CATCHUP_H_
#define KVINDEXER_BENCH_FLEET_CATCHUP_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "fleet/event_log.h"
#include "fleet_replica.h"

namespace kvindexer::bench {

struct ReplicaStartFigures {
  double seconds_to_listen = 0;
  double seconds_to_serving = 0;
  double seconds_to_caught_up = 0;  // applied position = the log's end
};

struct CatchUpFigures {
  uint64_t log_end = 0;           // the log's last position
  ReplicaStartFigures whole_log;  // no snapshot
  double snapshot_written_s = 0;  // from that start to the snapshot stored
  double snapshot_round_s = 0;    // the writer's own figure
  ReplicaStartFigures from_snapshot;
  std::optional<LoadedSnapshotLine> snapshot;  // as the second one loaded it
};

// REQUIRES: the log holds records and no snapshot exists for its stream.
// `options.snapshot_interval_ms` is ignored. On success `*serving` is the
// replica started from the snapshot, still running.
[[nodiscard]] absl::StatusOr<CatchUpFigures> MeasureCatchUp(
    fleet::EventLog& log, const ReplicaOptions& options,
    std::chrono::seconds timeout, std::unique_ptr<FleetReplica>* serving);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_FLEET_CATCHUP_H_
