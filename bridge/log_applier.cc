#include "bridge/log_applier.h"

#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/absl_view.h"

namespace kvindexer::bridge {

using kv_indexer::v1::ApplyExternalKvBatchRequest;
using kv_indexer::v1::ApplyExternalKvBatchResponse;
using kv_indexer::v1::ReplaceExternalKvSnapshotRequest;
using kv_indexer::v1::ReplaceExternalKvSnapshotResponse;
using LogRecord = ::kvindexer::fleet::v1::LogRecord;

namespace {

// PROBE(epoch) of docs/bridge-events.md, "Recovery > Primitives".
bool IsProbe(const ApplyExternalKvBatchRequest& request) {
  return request.enforce_sequence() && request.seq() == 0 &&
         request.actions_size() == 0;
}

// Who wrote the record at `position`: its producer, or why that is unknown.
struct LastWriter {
  uint64_t position = 0;
  std::optional<std::string> producer;
  std::string unknown_because;
};

absl::StatusOr<LastWriter> FindLastWriter(fleet::EventLog& log,
                                          std::string_view worker_id) {
  absl::StatusOr<uint64_t> last = log.LastPositionOf(worker_id);
  if (!last.ok()) return last.status();
  LastWriter writer;
  writer.position = *last;
  if (*last == 0) {
    writer.unknown_because = "the worker has no record left in the log";
    return writer;
  }
  absl::StatusOr<std::vector<fleet::LoggedRecord>> read =
      log.Read(*last, 1, std::chrono::milliseconds(0));
  if (!read.ok()) return read.status();
  if (read->empty() || read->front().position != *last) {
    writer.unknown_because = "that record is no longer in the log";
    return writer;
  }
  LogRecord decoded;
  if (!decoded.ParseFromString(read->front().payload)) {
    writer.unknown_because = "that record is not a log record";
    return writer;
  }
  writer.producer = decoded.producer();
  return writer;
}

}  // namespace

std::string GatedDedupId(std::string_view worker_id, std::string_view epoch,
                         uint64_t seq) {
  return absl::StrCat(absl::BytesToHexString(absl::string_view(
                          worker_id.data(), worker_id.size())),
                      ":", AbslView(epoch), ":", seq);
}

LogApplier::LogApplier(std::string worker_id, std::string producer,
                       fleet::EventLog* log)
    : worker_id_(std::move(worker_id)),
      producer_(std::move(producer)),
      log_(log) {}

absl::Status LogApplier::Apply(const ApplyExternalKvBatchRequest& request,
                               ApplyExternalKvBatchResponse* response) {
  return SendApply(request, 0, response);
}

absl::Status LogApplier::Heartbeat(const ApplyExternalKvBatchRequest& request,
                                   uint32_t ttl_ms,
                                   ApplyExternalKvBatchResponse* response) {
  return SendApply(request, ttl_ms, response);
}

absl::Status LogApplier::SendApply(const ApplyExternalKvBatchRequest& request,
                                   uint32_t heartbeat_ttl_ms,
                                   ApplyExternalKvBatchResponse* response) {
  LogRecord record;
  *record.mutable_apply() = request;
  record.set_heartbeat_ttl_ms(heartbeat_ttl_ms);
  record.set_fidelity(fidelity_);
  record.set_producer(producer_);
  const bool probe = IsProbe(request);
  const bool gated = request.enforce_sequence() && !probe;
  absl::StatusOr<fleet::AppendAck> ack =
      Publish(request.worker_id(), record,
              gated ? GatedDedupId(request.worker_id(), request.worker_epoch(),
                                   request.seq())
                    : std::string());
  if (ack.ok() && gated && ack->duplicate &&
      ack->position < last_replace_position_) {
    // The earlier copy predates the last snapshot install, which replaced
    // what it did: the replicas need this apply again after the install.
    ack = Publish(request.worker_id(), record, std::string());
  }
  if (!ack.ok()) return ack.status();
  if (probe) {
    // What a gated server answers (docs/contract.md, "Recovery > The
    // sequence gate"), from the records this applier wrote.
    if (request.worker_epoch() != epoch_ || !checkpoint_.has_value()) {
      return absl::FailedPreconditionError(
          absl::StrCat("no snapshot of epoch \"", request.worker_epoch(),
                       "\" is installed for worker \"", worker_id_,
                       "\" by this bridge's log records"));
    }
    response->set_applied_seq(*checkpoint_);
    response->set_duplicate(true);
    return absl::OkStatus();
  }
  if (gated) NoteGatedApply(request.worker_epoch(), request.seq());
  response->set_applied_seq(request.seq());
  response->set_duplicate(gated && ack->duplicate);
  return absl::OkStatus();
}

absl::Status LogApplier::Replace(
    const ReplaceExternalKvSnapshotRequest& request,
    ReplaceExternalKvSnapshotResponse* response) {
  LogRecord record;
  *record.mutable_replace() = request;
  record.set_fidelity(fidelity_);
  record.set_producer(producer_);
  absl::StatusOr<fleet::AppendAck> ack =
      Publish(request.worker_id(), record, std::string());
  if (!ack.ok()) return ack.status();
  epoch_ = request.worker_epoch();
  checkpoint_ = request.applied_seq();
  last_replace_position_ = ack->position;
  response->set_applied_seq(request.applied_seq());
  return absl::OkStatus();
}

void LogApplier::NoteGatedApply(const std::string& epoch, uint64_t seq) {
  // Another epoch, or none installed: the gate refuses and changes nothing.
  if (epoch != epoch_ || !checkpoint_.has_value()) return;
  if (seq <= *checkpoint_) return;  // a duplicate
  if (seq == *checkpoint_ + 1) {
    checkpoint_ = seq;
  } else {
    checkpoint_.reset();  // a gap clears the worker
  }
}

std::string LogApplier::NextProducerDedupId() {
  return absl::StrCat(producer_, ":", ++counter_);
}

absl::StatusOr<fleet::AppendAck> LogApplier::Publish(
    const std::string& worker_id, const LogRecord& record,
    std::string natural_dedup_id) {
  if (worker_id != worker_id_) {
    return absl::InvalidArgumentError(
        absl::StrCat("a request for worker \"", worker_id,
                     "\" cannot go to the event log of this bridge, which "
                     "writes worker \"",
                     worker_id_, "\""));
  }
  std::string payload = record.SerializeAsString();
  if (payload.size() > log_->max_payload_bytes()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a log record of ", payload.size(),
                     " bytes is above the event log's limit of ",
                     log_->max_payload_bytes(), " bytes"));
  }
  std::string dedup_id;
  if (unavailable_.has_value() && unavailable_->first == payload) {
    // A retry: the failed append may have landed.
    dedup_id = std::move(unavailable_->second);
  } else if (!natural_dedup_id.empty()) {
    dedup_id = std::move(natural_dedup_id);
  } else {
    dedup_id = NextProducerDedupId();
  }
  unavailable_.reset();
  absl::StatusOr<fleet::AppendAck> ack = FencedAppend(payload, dedup_id);
  if (ack.status().code() == absl::StatusCode::kUnavailable) {
    unavailable_.emplace(std::move(payload), std::move(dedup_id));
  }
  return ack;
}

absl::StatusOr<fleet::AppendAck> LogApplier::FencedAppend(
    const std::string& payload, const std::string& dedup_id) {
  if (!expected_last_.has_value()) {
    absl::StatusOr<uint64_t> last = log_->LastPositionOf(worker_id_);
    if (!last.ok()) return last.status();
    expected_last_ = *last;
  }
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<fleet::AppendAck> ack =
        log_->Append(worker_id_, payload, dedup_id, expected_last_);
    if (ack.ok()) {
      // A duplicate's position is the earlier copy's, not the last one.
      if (!ack->duplicate) expected_last_ = ack->position;
      return ack;
    }
    if (ack.status().code() != absl::StatusCode::kFailedPrecondition) {
      return ack.status();
    }
    // The fence: the worker's last record is not the one we wrote last.
    // A duplicate is recognised before the fence, so that record does not
    // carry this append's dedup id.
    absl::StatusOr<LastWriter> writer = FindLastWriter(*log_, worker_id_);
    if (!writer.ok()) return writer.status();
    const bool ours =
        writer->position == 0 || writer->producer == std::optional(producer_);
    if (ours && attempt == 0) {
      // Our own earlier append whose answer was lost (or a trim that took
      // every record of the worker): go on after it.
      expected_last_ = writer->position;
      continue;
    }
    if (ours) return ack.status();
    return absl::FailedPreconditionError(absl::StrCat(
        "another bridge writes worker \"", worker_id_, "\" to the event log: ",
        writer->producer.has_value()
            ? absl::StrCat("producer \"", *writer->producer, "\"")
            : absl::StrCat("an unknown producer (", writer->unknown_because,
                           ")"),
        " wrote its last record, at position ", writer->position,
        ", where this bridge (producer \"", producer_,
        "\") expected its own at ", *expected_last_,
        "; this bridge stops rather than fight over the worker: run one "
        "bridge per worker"));
  }
}

}  // namespace kvindexer::bridge
