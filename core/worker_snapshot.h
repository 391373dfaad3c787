// WorkerSnapshot: one worker as the operator sees it, copied out of the
// Indexer for the admin API and the metrics (docs/admin-api.md,
// "ListWorkers"). Nothing in it is used to answer a query.
#ifndef KVINDEXER_CORE_WORKER_SNAPSHOT_H_
#define KVINDEXER_CORE_WORKER_SNAPSHOT_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/fidelity_header.h"
#include "core/placement_bound.h"
#include "core/stream_metadata.h"
#include "core/worker_sequence_table.h"
#include "kvindexer/backend.h"

namespace kvindexer {

struct WorkerSnapshot {
  std::string worker_id;
  std::string address;
  std::optional<CacheSpec> spec;
  SequenceState sequence_state = SequenceState::kInvalid;
  bool ready = false;
  bool configured = false;
  // Set when sequence_state is kSequenced.
  std::optional<SequenceCheckpoint> checkpoint;
  // The last mutation that took effect for this worker, on the Indexer's
  // clock; nullopt when none has since the process started (a worker
  // recovered from the data directory has none until its next apply).
  std::optional<MonotonicClock::TimePoint> last_apply;
  // Heartbeat liveness: set when the worker is marked.
  std::optional<MonotonicClock::Duration> heartbeat_ttl;
  std::optional<MonotonicClock::TimePoint> last_heartbeat;
  std::optional<MonotonicClock::TimePoint> heartbeat_deadline;
  Fidelity fidelity = Fidelity::kUnknown;
  std::string fidelity_reason;  // the bridge's words, when degraded
  // The stream's metadata (core/stream_metadata.h); `worker_id` is the
  // stream's backend id (core/stream_key.h).
  StreamMetadata meta;
  // WorkerRecord::covered.
  bool covered = false;
  // WorkerRecord::evicted and evicted_placements.
  bool evicted = false;
  std::array<uint64_t, kMaxEvictionReason + 1> evicted_placements{};
  // Placements per tier (index = tier, 1..3; [0] unused), from the backend;
  // nullopt when the backend cannot count them (ABI minor < 2).
  std::optional<std::array<uint64_t, kMaxTier + 1>> placements_by_tier;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_WORKER_SNAPSHOT_H_
