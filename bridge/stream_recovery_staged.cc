// StreamRecovery's staged INSTALL of a snapshot-v2 in multi-stream mode
// (docs/bridge-events.md, "Many streams in one process > Snapshot-v2
// installs"): Begin with the header's epoch, barrier and the stream's
// metadata, Appends of at most 16,384 placements, Commit. Nothing is
// visible at the server before the Commit, so a failure anywhere leaves
// the stream's previous state in place.
#include <utility>

#include "absl/strings/str_cat.h"
#include "bridge/recovery_requests.h"
#include "bridge/status_classifier.h"
#include "bridge/stream_recovery.h"
#include "common/fidelity_header.h"
#include "common/log_text.h"
#include "spdlog/spdlog.h"

namespace kvindexer::bridge {

using kv_indexer::v1::AbortExternalKvSnapshotRequest;
using kv_indexer::v1::AppendExternalKvSnapshotResponse;
using kv_indexer::v1::BeginExternalKvSnapshotResponse;
using kv_indexer::v1::CommitExternalKvSnapshotRequest;
using kv_indexer::v1::CommitExternalKvSnapshotResponse;

bool StreamRecovery::StagedInstall(const PublisherSnapshot& snapshot) {
  // The generation the header names goes on the Configure first: Begin and
  // Commit refuse metadata that differs from the configured stream.
  if (snapshot.fields.worker_generation &&
      *snapshot.fields.worker_generation != header_.worker_generation) {
    header_.worker_generation = *snapshot.fields.worker_generation;
    spdlog::info("worker generation \"{}\" (snapshot-v2 header)",
                 LogText(header_.worker_generation));
    if (io_.configure) (void)io_.configure(header_.worker_generation);
  }
  const std::vector<kv_indexer::v1::TierHashes> placement =
      SnapshotV2Placement(snapshot.blocks, header_.cache_spec.has_value());
  StagedInstallRequests staged = BuildStagedInstall(
      header_, snapshot.epoch, snapshot.barrier_seq, snapshot.barrier_id,
      SnapshotMetadata(*options_.expected, header_.worker_generation),
      placement);
  // A snapshot-v2 install is exact.
  io_.applier->SetFidelity(FidelityHeader::Format(std::string()));
  // One transaction per turn; a turn that fails in a way a new transaction
  // may get past backs off and starts again from Begin.
  while (true) {
    if (Interrupted()) return false;
    BeginExternalKvSnapshotResponse begun;
    absl::Status status = io_.applier->BeginSnapshot(staged.begin, &begun);
    if (!status.ok()) {
      io_.stats->CountRpcFailure(static_cast<int>(status.code()));
      if (status.code() == absl::StatusCode::kUnimplemented) {
        spdlog::warn(
            "the indexer has no staged snapshot RPCs ({}); snapshot-v2s are "
            "installed with ReplaceExternalKvSnapshot",
            LogText(status.ToString(), kLogMessageBytes));
        staged_unimplemented_ = true;
        return Install(snapshot.epoch, snapshot.barrier_seq, placement, {},
                       std::nullopt);
      }
      if (!RetryInstallStep(status, "BeginExternalKvSnapshot", "begin")) {
        return false;
      }
      continue;
    }
    io_.stats->NoteIndexerReached();
    if (io_.indexer_epoch) io_.indexer_epoch(begun.indexer_epoch());
    const std::string& transaction = begun.transaction_id();

    absl::Status appended = absl::OkStatus();
    for (auto& append : staged.appends) {
      append.set_transaction_id(transaction);
      AppendExternalKvSnapshotResponse answer;
      appended = io_.applier->AppendSnapshot(append, &answer);
      if (!appended.ok()) break;
    }
    if (!appended.ok()) {
      io_.stats->CountRpcFailure(static_cast<int>(appended.code()));
      // Frees the reservation now rather than at the idle timeout; its own
      // failure changes nothing (the transaction expires).
      AbortExternalKvSnapshotRequest abort;
      abort.set_transaction_id(transaction);
      if (absl::Status aborted = io_.applier->AbortSnapshot(abort);
          !aborted.ok()) {
        io_.stats->CountRpcFailure(static_cast<int>(aborted.code()));
      }
      // NOT_FOUND (expired or superseded) and FAILED_PRECONDITION (the
      // stream was removed meanwhile) end this transaction only.
      if (IsPermanentStatus(appended.code()) &&
          appended.code() != absl::StatusCode::kNotFound &&
          appended.code() != absl::StatusCode::kFailedPrecondition) {
        Fatal(appended, "AppendExternalKvSnapshot");
        return false;
      }
      if (!RpcBackoff(appended, "AppendExternalKvSnapshot")) return false;
      continue;
    }

    // A transient Commit failure keeps the transaction: the same Commit is
    // sent again, and a repeat of one that went through answers the same.
    CommitExternalKvSnapshotRequest commit;
    commit.set_transaction_id(transaction);
    CommitExternalKvSnapshotResponse committed;
    while (true) {
      status = io_.applier->CommitSnapshot(commit, &committed);
      if (status.ok() || status.code() == absl::StatusCode::kNotFound) break;
      io_.stats->CountRpcFailure(static_cast<int>(status.code()));
      if (!RetryInstallStep(status, "CommitExternalKvSnapshot", "commit")) {
        return false;
      }
    }
    if (status.code() == absl::StatusCode::kNotFound) {
      // The transaction is gone (the server restarted or it expired).
      io_.stats->CountRpcFailure(static_cast<int>(status.code()));
      if (!RpcBackoff(status, "CommitExternalKvSnapshot")) return false;
      continue;
    }
    break;
  }
  // An install past the indexer's placement bound is evicted as it lands,
  // and the Commit's answer says so, as a Replace's does.
  io_.stats->NoteIndexerReached();
  CheckEvicted(/*install=*/true);
  rpc_backoff_.Reset();
  if (server_mode_ == ServerMode::kUndecided) {
    server_mode_ = ServerMode::kGated;
    SyncModeStats();
  }
  last_gated_ok_ = io_.clock->Now();
  ++io_.stats->installs;
  sync_installed_ = true;
  watermarks_.Reset(snapshot.barrier_seq, snapshot.epoch, true, {});
  SetExact();
  return true;
}

}  // namespace kvindexer::bridge
