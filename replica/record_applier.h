// Hands one record of the event log to an Indexer (docs/fleet.md, "Replicas
// follow the log"): the same IndexOperations calls, with the same metadata,
// that the gRPC service makes for the request the record stands for. Every
// replica, and the snapshot writer, applies records only through this, so
// that the same log gives the same contents everywhere.
//
// Record kinds and where each must be filed (LoggedRecord::worker_id):
//   - apply, replace: under the backend id of the stream they name
//     (core/stream_key.h): the worker id for a legacy stream;
//   - configure: under kConfigureLogKey (fleet/event_log.h);
//   - invalidate: under the stream's backend id; applied as InvalidateWorker;
//   - snapshot_commit (inline form): under the stream's backend id;
//     installed through the Indexer's replay of WAL op 8
//     (DurableState::Replay), the same install a restart gives a logged
//     commit. A commit whose stream has no configured record is refused
//     with FAILED_PRECONDITION and changes nothing, as a live Commit would
//     be. The payload form (payload_id set) is undecodable here: its
//     reader fetches the placements first (replica/commit_payload.h) and
//     applies the inline form through ApplyDecodedRecord;
//   - placement_evictions: under kEvictionLogKey; applied as
//     OperatorView::ApplyLoggedEvictions (replica/eviction_proposer.h
//     proposes them). A record with an eviction that names no worker, a
//     tier out of range or an unknown reason is undecodable as a whole.
//
// Thread safety: as the Indexer's mutating calls.
#ifndef KVINDEXER_REPLICA_RECORD_APPLIER_H_
#define KVINDEXER_REPLICA_RECORD_APPLIER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "core/indexer.h"
#include "fleet/event_log.h"
#include "kvindexer_fleet.pb.h"

namespace kvindexer::replica {

enum class RecordOutcome {
  kApplied,      // the Indexer took it (OK, including a gate duplicate)
  kRefused,      // the Indexer answered an error: its state is as the
                 // same gRPC call would have left it
  kUndecodable,  // not a LogRecord, no body, or filed under another worker
                 // than the one it names: skipped, nothing changed
};

struct RecordResult {
  RecordOutcome outcome = RecordOutcome::kApplied;
  absl::Status status;  // the Indexer's answer, or why it was undecodable
  // kApplied: the Indexer's response message, serialised (an
  // ApplyExternalKvBatchResponse, ReplaceExternalKvSnapshotResponse,
  // ConfigureExpectedWorkersResponse, InvalidateWorkerResponse or
  // CommitExternalKvSnapshotResponse, by the record's body); empty
  // for placement evictions and otherwise. A replica that wrote the record
  // through answers it.
  std::string response;
};

// The peer name a record's producer gets in the Indexer's duplicate-claim
// detection, the counterpart of a gRPC peer address: "log:<producer>".
std::string LogPeerName(std::string_view producer);

// Decodes `record.payload` and applies it to `indexer`.
RecordResult ApplyLogRecord(Indexer& indexer,
                            const fleet::LoggedRecord& record);

// Applies `record` when its position lies past `*applied_position` and
// moves *applied_position to it; nullopt for a record at or below it, which
// the Indexer already holds (a replica that loaded a snapshot at k and reads
// the log from any j <= k skips records j+1..k this way).
// REQUIRES: applied_position != nullptr.
std::optional<RecordResult> ApplyLogRecordAfter(
    Indexer& indexer, uint64_t* applied_position,
    const fleet::LoggedRecord& record);

// The same for a record already decoded.
RecordResult ApplyDecodedRecord(
    Indexer& indexer, std::string_view worker_id,
    const ::kvindexer::fleet::v1::LogRecord& record);

}  // namespace kvindexer::replica

#endif  // KVINDEXER_REPLICA_RECORD_APPLIER_H_
