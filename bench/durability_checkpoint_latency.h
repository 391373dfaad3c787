// Prefix-query latency while the server writes a checkpoint, against the
// same offered load on the idle server (docs/durability.md, "Checkpoints":
// queries are never blocked by checkpoint I/O).
//
// A checkpoint starts when the log file passes KV_INDEXER_CHECKPOINT_BYTES:
// the server continues in the next log generation and a background thread
// builds the next checkpoint from the previous one and the closed log
// (loading, replaying, then writing checkpoint-<g>.ckpt.tmp and renaming
// it). So each round first sends log traffic that leaves the index as it
// was: one extra worker REPORTs and REVOKEs the same 16,384 hashes in turn
// (ending on a REVOKE). As soon as the data directory shows the next log
// generation, that traffic stops and fixed-rate queries run until the new
// checkpoint file is in place: the whole compaction, not only its write.
// The idle run of the round sends the same queries with nothing else going
// on.
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
  double qps = 1000;  // offered load of both runs
  uint32_t max_outstanding = 512;
  absl::Duration idle_duration = absl::Seconds(5);
  uint32_t rounds = 3;
  // Bounds: the log traffic until a checkpoint starts, and the checkpoint.
  absl::Duration max_trigger = absl::Seconds(120);
  absl::Duration max_checkpoint = absl::Seconds(300);
  absl::Duration rpc_deadline = absl::Seconds(2);
  absl::Duration progress_every = absl::Seconds(2);
};

struct CheckpointLatencyFigures {
  std::vector<double> idle_p99_us;    // one per round
  std::vector<double> during_p99_us;  // one per round with samples
  std::vector<double> during_samples;
  // From the new log generation to the new checkpoint file.
  std::vector<double> checkpoint_seconds;
  // Of which the checkpoint-*.tmp file was seen (the write).
  std::vector<double> write_seconds;
  std::vector<double> trigger_seconds;  // log traffic until the rotation
  uint64_t failed_queries = 0;
};

// REQUIRES: `rig` runs with a data directory at `data_dir`.
[[nodiscard]] absl::StatusOr<CheckpointLatencyFigures> MeasureCheckpointLatency(
    DurabilityRig& rig, const std::string& data_dir,
    const std::vector<v1::MatchExternalKvPrefixRequest>& queries,
    const CheckpointLatencyOptions& options, Report* report);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_DURABILITY_CHECKPOINT_LATENCY_H_
