// The Indexer's staged-snapshot calls (core/index_operations.h;
// docs/contract.md, "Recovery > Staged snapshots"): Begin, Append, Commit and
// Abort over the staging table (core/snapshot_staging.h), and the install a
// Commit shares with the replay of its log record.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/log_text.h"
#include "core/backend_status.h"
#include "core/indexer.h"
#include "core/mutation_records.h"
#include "core/request_validation.h"
#include "core/stream_key.h"
#include "core/stream_metadata.h"
#include "core/worker_batches.h"
#include "fmt/format.h"

namespace kvindexer {
namespace {

using state::v1::StagedSnapshotCommit;

SnapshotStaging::Metadata StagingMetadataOf(
    const v1::ExternalKvSnapshotMetadata& wire) {
  return SnapshotStaging::Metadata{
      .model = wire.model(),
      .worker_generation = wire.worker_generation(),
      .hash_schema_version = wire.hash_schema_version(),
      .page_size = wire.page_size(),
      .is_bigram = wire.is_bigram()};
}

v1::ExternalKvSnapshotMetadata WireStagingMetadataOf(
    const SnapshotStaging::Metadata& meta) {
  v1::ExternalKvSnapshotMetadata wire;
  wire.set_model(meta.model);
  wire.set_worker_generation(meta.worker_generation);
  wire.set_hash_schema_version(meta.hash_schema_version);
  wire.set_page_size(meta.page_size);
  wire.set_is_bigram(meta.is_bigram);
  return wire;
}

// S5 (and M4): every stored value that says something (non-empty,
// non-zero) equals the snapshot's; is_bigram counts with a stored schema.
absl::Status CheckSnapshotMetadata(const StreamMetadata& stored,
                                   const SnapshotStaging::Metadata& snapshot) {
  const bool differs =
      (!stored.generation.empty() &&
       stored.generation != snapshot.worker_generation) ||
      (!stored.model.empty() && stored.model != snapshot.model) ||
      (stored.hash_schema_version != 0 &&
       (stored.hash_schema_version != snapshot.hash_schema_version ||
        stored.is_bigram != snapshot.is_bigram)) ||
      (stored.page_size != 0 && stored.page_size != snapshot.page_size);
  if (!differs) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "snapshot metadata differs from the configured stream");
}

absl::Status StagingStreamNotConfigured(std::string_view id) {
  return absl::FailedPreconditionError(
      fmt::format("stream {} is not configured",
                  LogText(StreamKeyText(DecodeStreamKey(id)))));
}

// The commit's log record, which is also the install's batch: the staged
// placements in REPORT form, one TierHashes per tier that has any, in the
// plan's order (tier, then hash).
void BuildCommitRecord(std::string_view transaction_id,
                       const SnapshotStaging::CommitPlan& plan,
                       StagedSnapshotCommit* commit) {
  const SnapshotStaging::BeginInfo& info = plan.info();
  SetStreamId(DecodeStreamKey(plan.stream_key()), commit->mutable_stream_id());
  commit->set_worker_address(info.worker_address);
  commit->set_worker_epoch(info.worker_epoch);
  commit->set_applied_seq(info.applied_seq);
  if (info.cache_spec.has_value()) {
    *commit->mutable_cache_spec() = WireCacheSpecOf(*info.cache_spec);
  }
  *commit->mutable_metadata() = WireStagingMetadataOf(info.metadata);
  commit->set_transaction_id(std::string(transaction_id));
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    const std::span<const StagedPlacement> run = plan.placements_at_tier(tier);
    if (run.empty()) continue;
    v1::TierHashes* entry = commit->add_hashes_by_tier();
    entry->set_tier(static_cast<v1::TierType>(tier));
    const int n = static_cast<int>(run.size());
    entry->mutable_hashes()->Resize(n, 0);
    entry->mutable_component_masks()->Resize(n, 0);
    entry->mutable_block_sizes()->Resize(n, 0);
    int64_t* hashes = entry->mutable_hashes()->mutable_data();
    uint32_t* masks = entry->mutable_component_masks()->mutable_data();
    uint32_t* sizes = entry->mutable_block_sizes()->mutable_data();
    for (int i = 0; i < n; ++i) {
      const StagedPlacement& p = run[static_cast<size_t>(i)];
      hashes[i] = p.block_hash;
      masks[i] = p.component_mask;
      sizes[i] = p.block_size;
    }
  }
}

}  // namespace

PendingAck Indexer::Begin(const v1::BeginExternalKvSnapshotRequest& req,
                          v1::BeginExternalKvSnapshotResponse* resp) {
  StreamKey key;
  if (absl::Status s = ValidateBegin(req, limits_, &key); !s.ok()) {
    return PendingAck(std::move(s));
  }
  const std::string id = EncodeStreamKey(key);
  SnapshotStaging::BeginInfo info{
      .worker_address = req.worker_address(),
      .worker_epoch = req.worker_epoch(),
      .applied_seq = req.applied_seq(),
      .cache_spec = req.has_cache_spec() ? std::optional<CacheSpec>(
                                               CacheSpecOf(req.cache_spec()))
                                         : std::nullopt,
      .metadata = StagingMetadataOf(req.metadata()),
      .record_token = 0};

  MutationLock lock(*this);
  absl::Status status = CheckLogOpenLocked();
  if (!status.ok()) return AckLocked(std::move(status));
  // S4, S5.
  const WorkerRecord* record = workers_.Find(id);
  if (record == nullptr || !record->configured) {
    return AckLocked(StagingStreamNotConfigured(id));
  }
  if (absl::Status s = CheckSnapshotMetadata(record->meta, info.metadata);
      !s.ok()) {
    return AckLocked(std::move(s));
  }
  info.record_token = record->incarnation;
  // S6, in the table.
  absl::StatusOr<std::string> transaction =
      staging_.Begin(id, req.expected_placements(), std::move(info));
  if (!transaction.ok()) return AckLocked(transaction.status());
  resp->set_transaction_id(std::move(*transaction));
  resp->set_indexer_epoch(indexer_epoch_);
  return AckLocked(absl::OkStatus());
}

PendingAck Indexer::Append(const v1::AppendExternalKvSnapshotRequest& req,
                           v1::AppendExternalKvSnapshotResponse* resp) {
  // Not a mutation of the index: the table's own mutex serialises it.
  absl::StatusOr<uint64_t> staged = staging_.Append(
      req.transaction_id(), static_cast<size_t>(req.placements_size()),
      [&req](size_t i) {
        const v1::ExternalKvSnapshotPlacement& p =
            req.placements(static_cast<int>(i));
        return PlacementInput{.block_hash = p.block_hash(),
                              .tier = static_cast<int32_t>(p.tier()),
                              .component_mask = p.component_mask(),
                              .block_size = p.block_size()};
      });
  if (!staged.ok()) return PendingAck(staged.status());
  resp->set_staged_placements(*staged);
  return PendingAck(absl::OkStatus());
}

PendingAck Indexer::Commit(const v1::CommitExternalKvSnapshotRequest& req,
                           v1::CommitExternalKvSnapshotResponse* resp,
                           const MutationOptions& options) {
  MutationLock lock(*this);
  absl::Status status = CheckLogOpenLocked();
  if (!status.ok()) return AckLocked(std::move(status));
  // M1 to M5; M3 and M4 here, under the mutation mutex, against the
  // records as they are now.
  absl::StatusOr<SnapshotStaging::CommitPlan> plan = staging_.PrepareCommit(
      req.transaction_id(),
      [this](std::string_view id,
             const SnapshotStaging::BeginInfo& info) -> absl::Status {
        const WorkerRecord* record = workers_.Find(id);
        if (record == nullptr || !record->configured ||
            record->incarnation != info.record_token) {
          return absl::FailedPreconditionError(fmt::format(
              "stream {} was removed or replaced since the snapshot began",
              LogText(StreamKeyText(DecodeStreamKey(id)))));
        }
        return CheckSnapshotMetadata(record->meta, info.metadata);
      });
  if (!plan.ok()) return AckLocked(plan.status());
  // Whether the stream is marked evicted once the commit is in (so that
  // the bridge can be told, as after a Replace).
  const auto note_evicted = [&] {
    if (options.evicted != nullptr) {
      *options.evicted = EvictedLocked(plan->stream_key());
    }
  };
  if (plan->already_committed()) {
    resp->set_applied_seq(plan->applied_seq());
    note_evicted();
    return AckLocked(absl::OkStatus());
  }
  StagedSnapshotCommit commit;
  BuildCommitRecord(req.transaction_id(), *plan, &commit);
  // A failure here (the log, the backend) is transient: the transaction
  // stays open for a retried Commit.
  if (absl::Status s =
          InstallStagedLocked(commit, plan->stream_key(), Origin::kLive);
      !s.ok()) {
    return AckLocked(std::move(s));
  }
  staging_.FinishCommit(*plan);
  EnforceBoundLocked();
  note_evicted();
  resp->set_applied_seq(plan->applied_seq());
  return AckLocked(absl::OkStatus());
}

PendingAck Indexer::Abort(const v1::AbortExternalKvSnapshotRequest& req,
                          v1::AbortExternalKvSnapshotResponse* /*resp*/) {
  staging_.Abort(req.transaction_id());
  return PendingAck(absl::OkStatus());
}

absl::Status Indexer::InstallStagedLocked(const StagedSnapshotCommit& commit,
                                          std::string_view id, Origin origin) {
  const bool live = origin == Origin::kLive;
  const WorkerRecord* found = workers_.Find(id);
  if (found == nullptr || !found->configured) {
    return live ? StagingStreamNotConfigured(id) : absl::OkStatus();
  }
  MutationLog* const log = LogFor(origin);
  uint64_t end = 0;
  if (absl::Status s = LogStagedCommit(log, commit, &end); !s.ok()) return s;
  const StagedCommitBatch batch(commit, id);
  if (absl::Status s = ToAbslStatus(ApplyToBackend(batch.view())); !s.ok()) {
    TakeBack(log, end);
    return s;
  }
  WorkerRecord& record = *workers_.FindToChange(id);
  record.address = commit.worker_address();
  record.spec = commit.has_cache_spec()
                    ? std::optional<CacheSpec>(CacheSpecOf(commit.cache_spec()))
                    : std::nullopt;
  record.ready = true;
  record.checkpoint =
      SequenceCheckpoint{commit.worker_epoch(), commit.applied_seq()};
  record.evicted = false;
  const v1::ExternalKvSnapshotMetadata& meta = commit.metadata();
  MergeStreamMetadata(
      MetadataUpdate{.generation = &meta.worker_generation(),
                     .model = &meta.model(),
                     .hash_schema_version = meta.hash_schema_version(),
                     .page_size = meta.page_size(),
                     .is_bigram = meta.is_bigram()},
      &record.meta);
  NoteTookEffect(id, record, FidelityHeader{}, origin);
  return absl::OkStatus();
}

}  // namespace kvindexer
