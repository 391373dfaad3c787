// DurableState: the Indexer's restart-safe state (docs/durability.md) as
// the data directory's store (durable/durable_store.h) and a fleet
// replica's snapshots (replica/replica_snapshot.h, replica/snapshot_image.h)
// handle it: the log every mutation is appended to, the replay of logged
// mutations, and the host's part of a checkpoint, in and out. One face of
// the Indexer (core/indexer.h), which owns the state; get it with
// Indexer::durable_state().
//
// Replay and Restore go through the same single-writer code as the live
// calls, under the Indexer's mutation mutex.
//
// Thread safety: every method may be called concurrently; Restore and
// AttachLog have REQUIRES on when.
// OWNERSHIP: a holder borrows the face; REQUIRES the object behind it (the
// Indexer) to outlive the holder. Never destroyed through the face.
#ifndef KVINDEXER_CORE_DURABLE_STATE_H_
#define KVINDEXER_CORE_DURABLE_STATE_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "core/mutation_log.h"
#include "kv_indexer_state.pb.h"

namespace kvindexer {

class DurableState {
 public:
  DurableState(const DurableState&) = delete;
  DurableState& operator=(const DurableState&) = delete;

  // From now on every mutation that takes effect is appended to `log`
  // (under the mutation mutex, before it is applied), and a mutating call's
  // answer is given only once the log is durable up to the end it saw
  // (core/pending_ack.h), so that nothing acknowledged (a duplicate's or a
  // probe's answer included) can be lost. A failed append changes nothing
  // and answers UNAVAILABLE (a heartbeat's marker is logged before its
  // apply: when the apply's own append fails, the worker stays marked). A
  // backend refusal takes the record back (MutationLog::Retract); a failed
  // wait answers UNAVAILABLE although the mutation took effect. Null
  // detaches. REQUIRES: `log` outlives its attachment and every call that
  // saw it; call before serving. Detaching (null after a log) is for
  // shutdown: every later mutation is refused with UNAVAILABLE, since it
  // could not be logged.
  virtual void AttachLog(MutationLog* log) = 0;
  // Applies one logged mutation again through the same single-writer code,
  // without limits, heartbeat metadata, claims or logging: at start-up on
  // the serving Indexer, and on a compaction's own Indexer. A record the
  // gate would now refuse changes nothing, as it did when it was logged,
  // and is OK. Only the record's shape is checked (the contract's fixed
  // limits, tiers, side arrays): a malformed one is INVALID_ARGUMENT and
  // changes nothing. A backend failure is returned as it is.
  virtual absl::Status Replay(const state::v1::WalRecord& record) = 0;
  // Installs one part of a checkpoint; parts come in file order (workers,
  // then markers, then placements). Markers are re-armed to now + TTL.
  // Placements go to the backend as one REPORT with the worker record's
  // address and spec; those of a worker without a record, or malformed
  // parts, are INVALID_ARGUMENT. REQUIRES: before serving, on an Indexer
  // that has applied nothing else.
  virtual absl::Status Restore(const state::v1::CheckpointChunk& chunk) = 0;
  // Hands the host's part of a checkpoint to `sink`: every WorkerState
  // (sorted by worker id), then every HeartbeatMarker. Takes the mutation
  // mutex; `sink` must not call back into the Indexer.
  virtual void ExportHost(
      absl::FunctionRef<void(const state::v1::CheckpointChunk&)> sink) = 0;
  // Worker records held, for the lines that report a recovery or a
  // snapshot load. Takes the mutation mutex.
  virtual size_t worker_count() = 0;
  // The first backend failure (a mutation the backend answered INTERNAL:
  // it cannot continue), as OperatorView::BackendFailure says it; nullopt
  // while there is none.
  virtual std::optional<std::string> BackendFailure() const = 0;
  // Sets the indexer epoch (IndexOperations::IndexerEpoch), which otherwise
  // is a random one chosen at construction. REQUIRES: before serving.
  virtual void SetIndexerEpoch(std::string epoch) = 0;

 protected:
  DurableState() = default;
  ~DurableState() = default;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_DURABLE_STATE_H_
