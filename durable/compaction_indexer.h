// What every checkpoint build shares (durable/compactor.h,
// durable/checkpoint_merge.h): the Indexer of its own it replays the files
// through, and the writer of its parts.
#ifndef KVINDEXER_DURABLE_COMPACTION_INDEXER_H_
#define KVINDEXER_DURABLE_COMPACTION_INDEXER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/indexer.h"
#include "core/sequence_gate_log.h"
#include "core/worker_lifecycle_log.h"
#include "durable/build_deadline.h"
#include "durable/checkpoint_file.h"
#include "durable/file_io.h"
#include "kv_indexer_state.pb.h"
#include "kvindexer/backend.h"

namespace kvindexer::durable {

// Placements per TierPlacements part (kv_indexer_state.proto).
inline constexpr size_t kHashesPerPart = 65536;

// An Indexer over a build's image. It replays what the serving Indexer
// already did and logged, so its gate and lifecycle lines (which would only
// repeat those) go nowhere, and its limits are wide: nothing a serving
// Indexer accepted under its own limits can trip them. Its placement bound
// stays off (a replay applies the logged evictions and decides none), so it
// never reads the image's counts: a merge's image holds only some blocks.
class CompactionIndexer {
 public:
  explicit CompactionIndexer(IndexBackend* image);
  CompactionIndexer(const CompactionIndexer&) = delete;
  CompactionIndexer& operator=(const CompactionIndexer&) = delete;

  DurableState& state() { return indexer_.durable_state(); }

  // Replays the closed logs wal-<first>.log to wal-<last>.log of `dir`, in
  // order, read through `io`. A bad record in one is DATA_LOSS: a closed
  // log was synced whole before the next one began, so that is damage,
  // which recovery handles, not a build. CANCELLED when `stop` expires;
  // ReplayWal's other errors.
  absl::Status ReplayClosedLogs(const std::string& dir, uint64_t first,
                                uint64_t last, const BuildDeadline& stop,
                                FileIo& io);

 private:
  SequenceGateLog gate_log_;
  WorkerLifecycleLog lifecycle_log_;
  Indexer indexer_;
};

// CANCELLED saying why `stop` expired.
absl::Status BuildCancelled(const BuildDeadline& stop);

// Serialises checkpoint parts into a CheckpointWriter. The first failure
// (or `stop` expiring) sticks: later parts are dropped and status() says
// why.
class ChunkWriter {
 public:
  ChunkWriter(CheckpointWriter* writer, const BuildDeadline& stop)
      : writer_(writer), stop_(stop) {}

  void Add(const state::v1::CheckpointChunk& chunk);
  const absl::Status& status() const { return status_; }

 private:
  CheckpointWriter* const writer_;
  const BuildDeadline& stop_;
  absl::Status status_;
  std::string payload_;
};

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_COMPACTION_INDEXER_H_
