#include "replica/record_applier.h"

#include <chrono>
#include <utility>
#include <vector>

#include "common/fidelity_header.h"
#include "common/heartbeat_header.h"
#include "core/placement_bound.h"
#include "core/stream_key.h"
#include "fmt/format.h"
#include "kv_indexer_state.pb.h"

namespace kvindexer::replica {
namespace {

using LogRecord = ::kvindexer::fleet::v1::LogRecord;

RecordResult Undecodable(std::string message) {
  return RecordResult{RecordOutcome::kUndecodable,
                      absl::InvalidArgumentError(std::move(message)),
                      {}};
}

// The Indexer's answer to a call whose response is `response`.
template <typename Response>
RecordResult FromIndexer(absl::Status status, const Response& response) {
  if (!status.ok()) {
    return RecordResult{RecordOutcome::kRefused, std::move(status), {}};
  }
  return RecordResult{RecordOutcome::kApplied, std::move(status),
                      response.SerializeAsString()};
}

// The backend id of the stream a request names: its stream_id when
// present, else its worker_id (the legacy key). A request whose two
// worker ids differ is filed under the stream's and refused by the Indexer
// (K1), as over gRPC.
template <typename Request>
std::string FiledKeyOf(const Request& req) {
  return req.has_stream_id() ? EncodeStreamKey(StreamKeyOf(req.stream_id()))
                             : req.worker_id();
}

RecordResult Misfiled(std::string_view what, std::string_view names,
                      std::string_view filed) {
  return Undecodable(
      fmt::format("{} for stream \"{}\" filed under worker \"{}\"", what,
                  StreamKeyText(DecodeStreamKey(names)),
                  StreamKeyText(DecodeStreamKey(filed))));
}

RecordResult ApplySnapshotCommit(
    Indexer& indexer, std::string_view worker_id,
    const ::kvindexer::state::v1::StagedSnapshotCommit& commit) {
  if (!commit.has_stream_id() || commit.stream_id().worker_id().empty()) {
    return Undecodable("a snapshot commit without a stream");
  }
  const StreamKey key = StreamKeyOf(commit.stream_id());
  const std::string id = EncodeStreamKey(key);
  if (id != worker_id) return Misfiled("a snapshot commit", id, worker_id);
  // Replay installs over a configured record and passes over any other; a
  // live Commit refuses that case, and so does the record. Records are
  // applied by one thread, so the record cannot change in between.
  const std::optional<WorkerRecord> record =
      indexer.operator_view().WorkerState(id);
  if (!record.has_value() || !record->configured) {
    return FromIndexer(absl::FailedPreconditionError(fmt::format(
                           "stream {} is not configured", StreamKeyText(key))),
                       ::kv_indexer::v1::CommitExternalKvSnapshotResponse());
  }
  ::kvindexer::state::v1::WalRecord wal;
  *wal.mutable_snapshot_commit() = commit;
  absl::Status status = indexer.durable_state().Replay(wal);
  // Replay's INVALID_ARGUMENT is a malformed record (tiers out of order,
  // side arrays that do not match): nothing was installed.
  if (absl::IsInvalidArgument(status)) {
    return Undecodable(std::string(status.message()));
  }
  // The install, as a live Commit's, is checked against the placement
  // bound; every replica does so at this position.
  if (status.ok()) indexer.operator_view().EnforcePlacementBound(id);
  ::kv_indexer::v1::CommitExternalKvSnapshotResponse response;
  response.set_applied_seq(commit.applied_seq());
  return FromIndexer(std::move(status), response);
}

RecordResult ApplyEvictions(
    Indexer& indexer, std::string_view worker_id,
    const ::kvindexer::fleet::v1::PlacementEvictions& record) {
  if (worker_id != fleet::kEvictionLogKey) {
    return Undecodable(
        fmt::format("placement evictions filed under worker \"{}\"",
                    StreamKeyText(DecodeStreamKey(worker_id))));
  }
  // Checked whole first: a malformed record evicts nothing anywhere.
  std::vector<PlannedEviction> evictions;
  evictions.reserve(record.evictions_size());
  for (const ::kvindexer::state::v1::PlacementEviction& e :
       record.evictions()) {
    if (e.worker_id().empty() || e.tier() < kTierHbm || e.tier() > kMaxTier ||
        e.reason() == 0 || e.reason() > kMaxEvictionReason) {
      return Undecodable(fmt::format(
          "a placement eviction with worker \"{}\", tier {}, reason {}",
          e.worker_id(), e.tier(), e.reason()));
    }
    evictions.push_back(
        PlannedEviction{.worker_id = BackendIdOf(e),
                        .tier = e.tier(),
                        .reason = static_cast<EvictionReason>(e.reason())});
  }
  absl::Status status =
      indexer.operator_view().ApplyLoggedEvictions(evictions, record.share());
  if (!status.ok()) {
    return RecordResult{RecordOutcome::kRefused, std::move(status), {}};
  }
  return RecordResult{RecordOutcome::kApplied, std::move(status), {}};
}

}  // namespace

std::string LogPeerName(std::string_view producer) {
  return "log:" + std::string(producer);
}

RecordResult ApplyLogRecord(Indexer& indexer,
                            const fleet::LoggedRecord& record) {
  LogRecord decoded;
  if (!decoded.ParseFromString(record.payload)) {
    return Undecodable("record " + std::to_string(record.position) +
                       " is not a kvindexer.fleet.v1.LogRecord");
  }
  return ApplyDecodedRecord(indexer, record.worker_id, decoded);
}

std::optional<RecordResult> ApplyLogRecordAfter(
    Indexer& indexer, uint64_t* applied_position,
    const fleet::LoggedRecord& record) {
  if (record.position <= *applied_position) return std::nullopt;
  *applied_position = record.position;
  return ApplyLogRecord(indexer, record);
}

RecordResult ApplyDecodedRecord(Indexer& indexer, std::string_view worker_id,
                                const LogRecord& record) {
  IndexOperations& ops = indexer.operations();
  const std::string peer = LogPeerName(record.producer());
  const FidelityHeader fidelity =
      record.fidelity().empty() ? FidelityHeader{}
                                : FidelityHeader::Parse(record.fidelity());
  switch (record.body_case()) {
    case LogRecord::kApply: {
      if (const std::string id = FiledKeyOf(record.apply()); id != worker_id) {
        return Misfiled("an apply", id, worker_id);
      }
      const HeartbeatHeader heartbeat =
          record.heartbeat_ttl_ms() == 0
              ? HeartbeatHeader{}
              : HeartbeatHeader::Valid(
                    std::chrono::milliseconds(record.heartbeat_ttl_ms()));
      ::kv_indexer::v1::ApplyExternalKvBatchResponse response;
      absl::Status status =
          ops.Apply(
                 record.apply(), &response,
                 {.peer = peer, .heartbeat = heartbeat, .fidelity = fidelity})
              .Wait();
      return FromIndexer(std::move(status), response);
    }
    case LogRecord::kReplace: {
      if (const std::string id = FiledKeyOf(record.replace());
          id != worker_id) {
        return Misfiled("a snapshot install", id, worker_id);
      }
      ::kv_indexer::v1::ReplaceExternalKvSnapshotResponse response;
      absl::Status status = ops.Replace(record.replace(), &response,
                                        {.peer = peer, .fidelity = fidelity})
                                .Wait();
      return FromIndexer(std::move(status), response);
    }
    case LogRecord::kConfigure: {
      if (worker_id != fleet::kConfigureLogKey) {
        return Undecodable(
            fmt::format("a configuration filed under worker \"{}\"",
                        StreamKeyText(DecodeStreamKey(worker_id))));
      }
      ::kv_indexer::v1::ConfigureExpectedWorkersResponse response;
      absl::Status status = ops.Configure(record.configure(), &response).Wait();
      return FromIndexer(std::move(status), response);
    }
    case LogRecord::kInvalidate: {
      if (const std::string id = FiledKeyOf(record.invalidate());
          id != worker_id) {
        return Misfiled("an invalidation", id, worker_id);
      }
      ::kv_indexer::v1::InvalidateWorkerResponse response;
      absl::Status status =
          ops.Invalidate(record.invalidate(), &response).Wait();
      return FromIndexer(std::move(status), response);
    }
    case LogRecord::kSnapshotCommit:
      if (!record.payload_id().empty()) {
        return Undecodable(
            "a snapshot commit whose placements are a payload of the "
            "snapshot store, applied without fetching them");
      }
      return ApplySnapshotCommit(indexer, worker_id, record.snapshot_commit());
    case LogRecord::kPlacementEvictions:
      return ApplyEvictions(indexer, worker_id, record.placement_evictions());
    case LogRecord::BODY_NOT_SET:
      break;
  }
  return Undecodable("a record without a body");
}

}  // namespace kvindexer::replica
