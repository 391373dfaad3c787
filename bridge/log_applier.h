// The bridge's applier in fleet mode (KV_INDEXER_SINK=jetstream;
// docs/fleet.md): every Apply, Heartbeat and Replace becomes one
// kvindexer.fleet.v1.LogRecord appended to the event log under the
// bridge's worker, instead of a gRPC call. The replicas that read the log
// make the Indexer calls the gRPC service would have made.
//
// Appends are idempotent across retries: a gated apply's de-duplication id
// is its (worker, epoch, seq), every other record's is "<producer>:<n>",
// and a call that repeats the request the previous call failed with
// UNAVAILABLE reuses that call's id. They are fenced: each append expects
// the worker's last record to be the one this applier wrote last, so that
// a second bridge writing the same worker is found and reported
// (FAILED_PRECONDITION naming its producer) rather than fought.
//
// The log answers no gate decisions, so a PROBE (a gated apply with seq 0
// and no actions) is answered from what this applier itself installed and
// sent: duplicate with the checkpoint those records leave, or
// FAILED_PRECONDITION when they leave none for the probe's epoch.
//
// Thread safety: as KvApplier, one caller at a time.
#ifndef KVINDEXER_BRIDGE_LOG_APPLIER_H_
#define KVINDEXER_BRIDGE_LOG_APPLIER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "bridge/kv_applier.h"
#include "fleet/event_log.h"
#include "kvindexer_fleet.pb.h"

namespace kvindexer::bridge {

class LogApplier final : public KvApplier {
 public:
  // `producer` identifies this bridge process in the records it writes
  // (e.g. "<hostname>:<pid>:<random>"); it must differ between processes.
  // REQUIRES: `log` outlives the applier; worker_id and producer non-empty.
  // OWNERSHIP: `log` is not taken.
  LogApplier(std::string worker_id, std::string producer, fleet::EventLog* log);

  void SetFidelity(std::string value) override { fidelity_ = std::move(value); }
  absl::Status Apply(
      const kv_indexer::v1::ApplyExternalKvBatchRequest& request,
      kv_indexer::v1::ApplyExternalKvBatchResponse* response) override;
  absl::Status Heartbeat(
      const kv_indexer::v1::ApplyExternalKvBatchRequest& request,
      uint32_t ttl_ms,
      kv_indexer::v1::ApplyExternalKvBatchResponse* response) override;
  absl::Status Replace(
      const kv_indexer::v1::ReplaceExternalKvSnapshotRequest& request,
      kv_indexer::v1::ReplaceExternalKvSnapshotResponse* response) override;

  const std::string& producer() const { return producer_; }

 private:
  absl::Status SendApply(
      const kv_indexer::v1::ApplyExternalKvBatchRequest& request,
      uint32_t heartbeat_ttl_ms,
      kv_indexer::v1::ApplyExternalKvBatchResponse* response);
  // Checks the worker and the size, then appends `record` with
  // `natural_dedup_id` (or the failed call's id on a retry; a fresh one
  // when empty). Remembers what a following retry needs.
  absl::StatusOr<fleet::AppendAck> Publish(
      const std::string& worker_id,
      const ::kvindexer::fleet::v1::LogRecord& record,
      std::string natural_dedup_id);
  // One append with the fence, resolving a fence failure as the header
  // says.
  absl::StatusOr<fleet::AppendAck> FencedAppend(const std::string& payload,
                                                const std::string& dedup_id);
  std::string NextProducerDedupId();
  // What the records this applier wrote leave the replicas' sequence gate
  // with after a gated apply of (epoch, seq) was appended.
  void NoteGatedApply(const std::string& epoch, uint64_t seq);

  const std::string worker_id_;
  const std::string producer_;
  fleet::EventLog* const log_;
  std::string fidelity_;
  uint64_t counter_ = 0;
  // The fence: the position of the last record under the worker, as far
  // as this applier knows; read from the log on the first append.
  std::optional<uint64_t> expected_last_;
  // The call before answered UNAVAILABLE: its payload and dedup id.
  std::optional<std::pair<std::string, std::string>> unavailable_;
  // The checkpoint the replicas' gate holds after this applier's records
  // (none: no install of `epoch_` yet, or a gap cleared it), and where the
  // last snapshot install landed in the log.
  std::string epoch_;
  std::optional<uint64_t> checkpoint_;
  uint64_t last_replace_position_ = 0;
};

// The de-duplication id of a gated apply of `seq` in `epoch` by worker
// `worker_id`: "<worker id bytes in lowercase hex>:<epoch>:<seq>".
std::string GatedDedupId(std::string_view worker_id, std::string_view epoch,
                         uint64_t seq);

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_LOG_APPLIER_H_
