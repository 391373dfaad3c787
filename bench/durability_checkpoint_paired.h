// Prefix-query latency with the checkpoint builder running against the
// same load with it paused, in alternating slices of one checkpoint
// (KV_INDEXER_CHECKPOINT_BUILDER=process only).
//
// The sequential measurement (durability_checkpoint_latency.h) compares an
// idle window with a later checkpoint window; on a shared virtual machine
// the idle p99 alone moves by a factor of three from one window to the
// next, so its ratio says as much about the machine's drift as about the
// checkpoint. Here, once the log rotates, the tool finds the builder
// process (the server's child) and runs pairs of slices of queries until
// the checkpoint is renamed into place: one slice with the builder stopped
// (SIGSTOP; "paused": the server with no checkpoint work, only the
// builder's memory resident), one with it running (SIGCONT), paused first
// in even pairs and running first in odd ones. The two slices of a pair see
// the same machine seconds apart, so the ratio of their p99s isolates what
// the builder costs the queries. What a pause does not stop: the kernel
// writing back pages the builder already wrote.
#ifndef KVINDEXER_BENCH_DURABILITY_CHECKPOINT_PAIRED_H_
#define KVINDEXER_BENCH_DURABILITY_CHECKPOINT_PAIRED_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bench_report.h"
#include "durability_rig.h"
#include "load_client.h"

namespace kvindexer::bench {

// The load of every slice of a paired measurement (this one and
// durability_interferer.h's).
struct PairedSliceLoad {
  double qps = 1000;  // offered
  uint32_t max_outstanding = 512;
  absl::Duration slice = absl::Seconds(3);
  absl::Duration rpc_deadline = absl::Seconds(2);
  absl::Duration progress_every = absl::Seconds(10);
};

// One slice: `queries` as `load` says, labelled `label` plus "@<qps>qps".
QueryResult RunPairedSlice(
    DurabilityRig& rig,
    const std::vector<v1::MatchExternalKvPrefixRequest>& queries,
    const PairedSliceLoad& load, const std::string& label);

struct PairedCheckpointOptions {
  PairedSliceLoad load;
  uint32_t rounds = 3;  // checkpoints
  absl::Duration max_trigger = absl::Seconds(120);
  absl::Duration max_checkpoint = absl::Seconds(600);
  // Fewer pairs over all rounds is an error (a smoke test that never
  // paused anything would prove nothing).
  uint32_t min_pairs = 0;
};

// One entry per pair of adjacent slices (paused, then running), over all
// rounds; a pair counts only when both slices have answers.
struct PairedCheckpointFigures {
  double qps = 0;
  std::vector<double> paused_p99_us;
  std::vector<double> running_p99_us;
  std::vector<double> ratios;              // running over paused, per pair
  std::vector<double> checkpoint_seconds;  // rotation to rename, per round
  uint64_t failed_queries = 0;
};

// REQUIRES: `rig` runs with a data directory at `data_dir` and builds
// checkpoints in a process (the server's child).
[[nodiscard]] absl::StatusOr<PairedCheckpointFigures> MeasurePairedCheckpoint(
    DurabilityRig& rig, const std::string& data_dir,
    const std::vector<v1::MatchExternalKvPrefixRequest>& queries,
    const PairedCheckpointOptions& options, Report* report);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_DURABILITY_CHECKPOINT_PAIRED_H_
