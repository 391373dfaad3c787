#include "replica/record_applier.h"

#include <chrono>

#include "common/fidelity_header.h"
#include "common/heartbeat_header.h"

namespace kvindexer::replica {
namespace {

RecordResult Undecodable(std::string message) {
  return RecordResult{RecordOutcome::kUndecodable,
                      absl::InvalidArgumentError(std::move(message))};
}

RecordResult FromIndexer(absl::Status status) {
  return RecordResult{
      status.ok() ? RecordOutcome::kApplied : RecordOutcome::kRefused,
      std::move(status)};
}

}  // namespace

std::string LogPeerName(std::string_view producer) {
  return "log:" + std::string(producer);
}

RecordResult ApplyLogRecord(IndexOperations& indexer,
                            const fleet::LoggedRecord& record) {
  ::kvindexer::fleet::v1::LogRecord decoded;
  if (!decoded.ParseFromString(record.payload)) {
    return Undecodable("record " + std::to_string(record.position) +
                       " is not a kvindexer.fleet.v1.LogRecord");
  }
  return ApplyDecodedRecord(indexer, record.worker_id, decoded);
}

std::optional<RecordResult> ApplyLogRecordAfter(
    IndexOperations& indexer, uint64_t* applied_position,
    const fleet::LoggedRecord& record) {
  if (record.position <= *applied_position) return std::nullopt;
  *applied_position = record.position;
  return ApplyLogRecord(indexer, record);
}

RecordResult ApplyDecodedRecord(
    IndexOperations& indexer, std::string_view worker_id,
    const ::kvindexer::fleet::v1::LogRecord& record) {
  using Body = ::kvindexer::fleet::v1::LogRecord;
  const std::string peer = LogPeerName(record.producer());
  const FidelityHeader fidelity =
      record.fidelity().empty() ? FidelityHeader{}
                                : FidelityHeader::Parse(record.fidelity());
  switch (record.body_case()) {
    case Body::kApply: {
      if (record.apply().worker_id() != worker_id) {
        return Undecodable(
            "an apply for worker \"" + record.apply().worker_id() +
            "\" filed under worker \"" + std::string(worker_id) + "\"");
      }
      const HeartbeatHeader heartbeat =
          record.heartbeat_ttl_ms() == 0
              ? HeartbeatHeader{}
              : HeartbeatHeader::Valid(
                    std::chrono::milliseconds(record.heartbeat_ttl_ms()));
      ::kv_indexer::v1::ApplyExternalKvBatchResponse response;
      return FromIndexer(
          indexer
              .Apply(
                  record.apply(), &response,
                  {.peer = peer, .heartbeat = heartbeat, .fidelity = fidelity})
              .Wait());
    }
    case Body::kReplace: {
      if (record.replace().worker_id() != worker_id) {
        return Undecodable(
            "a snapshot install for worker \"" + record.replace().worker_id() +
            "\" filed under worker \"" + std::string(worker_id) + "\"");
      }
      ::kv_indexer::v1::ReplaceExternalKvSnapshotResponse response;
      return FromIndexer(indexer
                             .Replace(record.replace(), &response,
                                      {.peer = peer, .fidelity = fidelity})
                             .Wait());
    }
    case Body::kConfigure:
    case Body::kInvalidate:
    case Body::kSnapshotCommit:
      // Written only by builds that write stream records through to the
      // log; this build does not read them yet.
      return Undecodable("a stream record this build does not apply");
    case Body::BODY_NOT_SET:
      break;
  }
  return Undecodable("a record without an apply or a snapshot install");
}

}  // namespace kvindexer::replica
