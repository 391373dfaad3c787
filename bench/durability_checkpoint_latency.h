// Prefix-query latency while the server makes a checkpoint, against the
// same offered load on the idle server (docs/durability.md, "Checkpoints":
// queries are never blocked by checkpoint work).
//
// A checkpoint starts when the log file passes KV_INDEXER_CHECKPOINT_BYTES:
// the server continues in the next log generation and a background thread
// builds the next checkpoint from the previous one and the closed log
// (loading and replaying them), then writes it (checkpoint-<g>.ckpt.tmp,
// renamed into place). Each round:
//   idle   fixed-rate queries with nothing else going on;
//   build  log traffic (durability_log_traffic.h) until the log rotates,
//          then the same queries until the checkpoint's file appears;
//   write  the same queries until the file is renamed into place.
// The phases are told apart by watching the data directory.
#ifndef KVINDEXER_BENCH_DURABILITY_CHECKPOINT_LATENCY_H_
#define KVINDEXER_BENCH_DURABILITY_CHECKPOINT_LATENCY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bench_report.h"
#include "durability_rig.h"
#include "load_client.h"

namespace kvindexer::bench {

struct CheckpointLatencyOptions {
  double qps = 1000;  // offered load of every run
  uint32_t max_outstanding = 512;
  absl::Duration idle_duration = absl::Seconds(5);
  uint32_t rounds = 3;
  // Bounds: the log traffic until the rotation, and the checkpoint.
  absl::Duration max_trigger = absl::Seconds(120);
  absl::Duration max_checkpoint = absl::Seconds(300);
  absl::Duration rpc_deadline = absl::Seconds(2);
  absl::Duration progress_every = absl::Seconds(2);
};

// One entry per round.
struct CheckpointLatencyFigures {
  double qps = 0;
  std::vector<double> idle_p99_us;
  std::vector<double> build_p99_us;  // rounds with answers only
  std::vector<double> write_p99_us;  // rounds with answers only
  std::vector<double> build_answers;
  std::vector<double> write_answers;
  std::vector<double> build_seconds;    // rotation to the file appearing
  std::vector<double> write_seconds;    // the file appearing to its rename
  std::vector<double> trigger_seconds;  // log traffic until the rotation
  uint64_t failed_queries = 0;          // of the idle and checkpoint runs
};

// REQUIRES: `rig` runs with a data directory at `data_dir`.
[[nodiscard]] absl::StatusOr<CheckpointLatencyFigures> MeasureCheckpointLatency(
    DurabilityRig& rig, const std::string& data_dir,
    const std::vector<v1::MatchExternalKvPrefixRequest>& queries,
    const CheckpointLatencyOptions& options, Report* report);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_DURABILITY_CHECKPOINT_LATENCY_H_
