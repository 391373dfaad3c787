// The RPCs of StreamRecovery and their error handling
// (docs/bridge-events.md, "Recovery > Primitives" and "Recovery > Errors"):
// registration, PROBE, INSTALL, SEND. Transient failures back off (100 ms
// doubling to 2 s) while the reader keeps buffering; a gated apply whose
// outcome is uncertain is probed before it is resent; FAILED_PRECONDITION
// from the gate means the server lost the stream; other permanent codes end
// the run.
#include <utility>

#include "absl/strings/str_cat.h"
#include "bridge/recovery_requests.h"
#include "bridge/status_classifier.h"
#include "bridge/stream_recovery.h"
#include "common/absl_view.h"
#include "common/fidelity_header.h"
#include "common/log_text.h"
#include "spdlog/spdlog.h"

namespace kvindexer::bridge {

using kv_indexer::v1::ApplyExternalKvBatchRequest;
using kv_indexer::v1::ApplyExternalKvBatchResponse;

namespace {

uint64_t HashCount(const ApplyExternalKvBatchRequest& request) {
  uint64_t n = 0;
  for (const auto& action : request.actions()) {
    n += static_cast<uint64_t>(action.hashes_size());
  }
  return n;
}

}  // namespace

absl::Status StreamRecovery::CallApply(
    const ApplyExternalKvBatchRequest& request,
    ApplyExternalKvBatchResponse* response, bool probe) {
  // The feed's fidelity as it stands (docs/admin-api.md, "The fidelity
  // header").
  io_.applier->SetFidelity(FidelityHeader::Format(degraded_reason_));
  absl::Status status = io_.applier->Apply(request, response);
  if (!status.ok()) {
    // A probe refused by the gate is an answer ("no checkpoint"), not a
    // failed RPC.
    if (probe && status.code() == absl::StatusCode::kFailedPrecondition) {
      ++io_.stats->rpcs_sent;
      io_.stats->NoteIndexerReached();
      return status;
    }
    io_.stats->CountRpcFailure(static_cast<int>(status.code()));
    return status;
  }
  ++io_.stats->rpcs_sent;
  io_.stats->NoteIndexerReached();
  CheckEvicted();
  io_.stats->actions_applied += static_cast<uint64_t>(request.actions_size());
  io_.stats->hashes_applied += HashCount(request);
  return status;
}

bool StreamRecovery::RpcBackoff(const absl::Status& status,
                                std::string_view what) {
  const auto delay = rpc_backoff_.NextDelay();
  if (auto n = rpc_throttle_.Allow(io_.clock->Now())) {
    spdlog::warn("{} failed: {}; retrying in {} ms ({} similar suppressed)",
                 what, LogText(status.ToString(), kLogMessageBytes),
                 delay.count(), *n);
  }
  return !io_.clock->WaitFor(delay);
}

bool StreamRecovery::RetryInstallStep(const absl::Status& status,
                                      std::string_view rpc,
                                      std::string_view step) {
  if (status.code() == absl::StatusCode::kFailedPrecondition) {
    StateLoss(absl::StrCat("snapshot ", AbslView(step),
                           " refused: ", status.message()));
    return false;
  }
  if (IsPermanentStatus(status.code())) {
    Fatal(status, rpc);
    return false;
  }
  return RpcBackoff(status, rpc);
}

bool StreamRecovery::Register() {
  while (true) {
    ApplyExternalKvBatchResponse response;
    absl::Status status = CallApply(RegistrationRequest(header_), &response);
    if (status.ok()) {
      rpc_backoff_.Reset();
      return true;
    }
    if (IsPermanentStatus(status.code())) {
      Fatal(status, "registration apply");
      return false;
    }
    if (!RpcBackoff(status, "registration apply")) return false;
  }
}

StreamRecovery::ProbeResult StreamRecovery::Probe(std::string_view epoch) {
  while (true) {
    ++io_.stats->probes;
    ApplyExternalKvBatchResponse response;
    absl::Status status =
        CallApply(ProbeRequest(header_, epoch), &response, /*probe=*/true);
    if (status.ok()) {
      rpc_backoff_.Reset();
      // Only a gated server answers a probe as a duplicate; a server
      // without the gate applies it as an empty seed-era apply.
      if (!response.duplicate()) return {true, std::nullopt};
      if (server_mode_ == ServerMode::kUndecided) {
        server_mode_ = ServerMode::kGated;
        SyncModeStats();
      }
      last_gated_ok_ = io_.clock->Now();
      return {true, response.applied_seq()};
    }
    if (status.code() == absl::StatusCode::kFailedPrecondition) {
      rpc_backoff_.Reset();
      return {true, std::nullopt};
    }
    if (IsPermanentStatus(status.code())) {
      Fatal(status, "probe");
      return {};
    }
    if (!RpcBackoff(status, "probe")) return {};
  }
}

bool StreamRecovery::Install(
    const std::string& epoch, uint64_t applied,
    std::span<const kv_indexer::v1::TierHashes> placement,
    std::span<const LiveBatch> replayed, std::optional<DegradedBy> degraded) {
  std::optional<DegradedBy> truncated;
  if (!gated()) {
    if (!SendSeedEra(LegacyInstallRequests(header_, applied,
                                           options_.clear_tiers, placement,
                                           options_.limits))) {
      return false;
    }
  } else {
    InstallRequest install = BuildInstallRequest(
        header_, epoch, applied, placement, options_.max_request_bytes);
    if (install.truncated()) {
      spdlog::warn(
          "snapshot truncated: {} of {} hashes fit one request; the rest are "
          "not installed",
          install.hashes_sent, install.hashes_total);
      truncated = DegradedBy{
          "snapshot_truncated",
          absl::StrCat(install.hashes_total - install.hashes_sent,
                       " hashes did not fit the request size limit")};
    }
    // The fidelity this install leaves the feed in (set below once it is
    // in).
    io_.applier->SetFidelity(FidelityHeader::Format(
        truncated ? truncated->reason
                  : (degraded ? degraded->reason : std::string())));
    while (true) {
      kv_indexer::v1::ReplaceExternalKvSnapshotResponse response;
      absl::Status status = io_.applier->Replace(install.request, &response);
      if (status.ok()) {
        io_.stats->NoteIndexerReached();
        CheckEvicted(/*install=*/true);
        break;
      }
      io_.stats->CountRpcFailure(static_cast<int>(status.code()));
      if (status.code() == absl::StatusCode::kUnimplemented) {
        if (options_.gate == SequenceGate::kOn) {
          Fatal(status,
                "ReplaceExternalKvSnapshot (KV_INDEXER_SEQUENCE_GATE=on needs "
                "an indexer with the sequence gate)");
        } else {
          SwitchToLegacy(status);
        }
        return false;
      }
      if (!RetryInstallStep(status, "ReplaceExternalKvSnapshot", "install")) {
        return false;
      }
    }
    rpc_backoff_.Reset();
    if (server_mode_ == ServerMode::kUndecided) {
      server_mode_ = ServerMode::kGated;
      SyncModeStats();
    }
    last_gated_ok_ = io_.clock->Now();
  }
  ++io_.stats->installs;
  sync_installed_ = true;
  watermarks_.Reset(applied, epoch, publisher_mode_ == PublisherMode::kSnapshot,
                    replayed);
  if (truncated) {
    Degrade(*truncated);
  } else if (degraded) {
    Degrade(*degraded);
  } else {
    SetExact();
  }
  return true;
}

void StreamRecovery::CountFoldedLiveBatch(const FoldResult& fold) {
  if (!fold.undecodable.empty()) return;
  ++io_.stats->batches_received;
  io_.stats->events_received += fold.events;
}

bool StreamRecovery::DecodeActions(const LiveBatch& batch) {
  absl::Status decoded = decoder_.Decode(batch.payload, &decoded_);
  if (!decoded.ok()) {
    io_.stats->CountSkippedMessage(MessageSkipReason::kBadBatch);
    spdlog::warn("undecodable batch seq={}: {}", batch.seq,
                 LogText(std::string(decoded.message()), kLogMessageBytes));
    actions_.Clear();
    return false;
  }
  ++io_.stats->batches_received;
  io_.stats->events_received += decoded_.event_count;
  for (const KvEvent& event : decoded_.events) {
    ++io_.stats->events_by_kind[static_cast<size_t>(event.kind)];
  }
  for (const SkippedEvent& skipped : decoded_.skipped) {
    io_.stats->CountSkippedEvent(skipped.reason);
    if (skipped.reason == EventSkipReason::kUnknownTag) continue;
    if (auto n = skipped_event_throttle_.Allow(io_.clock->Now())) {
      spdlog::warn(
          "skipping event {} of batch seq={} ({}): {} ({} similar "
          "suppressed)",
          skipped.index, batch.seq,
          std::string(EventSkipReasonName(skipped.reason)),
          LogText(skipped.detail, kLogMessageBytes), *n);
    }
  }
  BuildActions(decoded_, options_.clear_tiers, &actions_);
  return true;
}

bool StreamRecovery::SendSeedEra(
    const std::vector<ApplyExternalKvBatchRequest>& requests) {
  while (true) {
    absl::Status failed;
    for (size_t i = 0; i < requests.size(); ++i) {
      ApplyExternalKvBatchResponse response;
      failed = CallApply(requests[i], &response);
      if (!failed.ok()) break;
      spdlog::debug("batch seq={} chunk {}/{} applied: {} actions, {} hashes",
                    requests[i].seq(), i + 1, requests.size(),
                    requests[i].actions_size(), HashCount(requests[i]));
    }
    if (failed.ok()) {
      rpc_backoff_.Reset();
      return true;
    }
    if (IsPermanentStatus(failed.code())) {
      Fatal(failed, "apply");
      return false;
    }
    if (!RpcBackoff(failed, "apply")) return false;
  }
}

bool StreamRecovery::SendBatch(const LiveBatch& batch) {
  const uint64_t seq = batch.seq;
  // Already covered (a duplicate answer or a probe moved `applied` past
  // it): sending it again could resurrect revoked blocks.
  if (gated() && watermarks_.applied() && seq <= *watermarks_.applied()) {
    return true;
  }
  if (!DecodeActions(batch)) {
    if (gated() && publisher_mode_ == PublisherMode::kSnapshot) {
      spdlog::warn("resynchronising from a new snapshot, which covers seq {}",
                   seq);
      RequestSync();
      return false;
    }
    Degrade({"undecodable_batch",
             absl::StrCat("batch seq=", seq, " could not be decoded")});
  }
  if (!gated()) {
    if (!SendSeedEra(SendRequests(actions_, header_, seq, std::nullopt,
                                  options_.limits))) {
      return false;
    }
    watermarks_.SetApplied(seq);
    return true;
  }
  const std::vector<ApplyExternalKvBatchRequest> requests = SendRequests(
      actions_, header_, seq, watermarks_.epoch(), options_.limits);
  // Whether a seed-era chunk of this batch may have been applied (its
  // answer lost counts): see LoseStateAfterSeedEra.
  bool seed_era_sent = false;
  while (true) {
    absl::Status failed;
    for (size_t i = 0; i < requests.size(); ++i) {
      if (i + 1 < requests.size()) seed_era_sent = true;
      ApplyExternalKvBatchResponse response;
      failed = CallApply(requests[i], &response);
      if (!failed.ok()) break;
      spdlog::debug("batch seq={} chunk {}/{} applied: {} actions, {} hashes",
                    seq, i + 1, requests.size(), requests[i].actions_size(),
                    HashCount(requests[i]));
      if (i + 1 == requests.size()) {
        rpc_backoff_.Reset();
        last_gated_ok_ = io_.clock->Now();
        watermarks_.SetApplied(response.applied_seq());
        return true;
      }
    }
    if (failed.code() == absl::StatusCode::kFailedPrecondition) {
      LoseStateAfterSeedEra(
          seed_era_sent, seq,
          absl::StrCat("apply of seq ", seq, " refused: ", failed.message()));
      return false;
    }
    if (IsPermanentStatus(failed.code())) {
      Fatal(failed, absl::StrCat("apply of seq ", seq));
      return false;
    }
    // The outcome is uncertain: ask the server before sending again.
    if (!RpcBackoff(failed, absl::StrCat("apply of seq ", seq))) return false;
    ProbeResult probe = Probe(watermarks_.epoch());
    if (!probe.completed) return false;
    if (!probe.checkpoint) {
      LoseStateAfterSeedEra(
          seed_era_sent, seq,
          "the server no longer holds a checkpoint for this stream");
      return false;
    }
    if (*probe.checkpoint >= seq) {
      watermarks_.SetApplied(*probe.checkpoint);
      return true;
    }
    if (*probe.checkpoint + 1 != seq) {
      LoseStateAfterSeedEra(
          seed_era_sent, seq,
          absl::StrCat("the server checkpoint ", *probe.checkpoint,
                       " is behind seq ", seq - 1));
      return false;
    }
  }
}

void StreamRecovery::LoseStateAfterSeedEra(bool seed_era_sent, uint64_t seq,
                                           std::string_view why) {
  // A seed-era apply makes a worker the server forgot ready again, with the
  // chunk's blocks: they would be served, though later actions of the batch
  // may revoke them, until the resynchronisation replaces the placement,
  // which may be long (an idle mode L worker, failing snapshots). Clear
  // every tier (the chunks may report at any of them) before going on.
  if (seed_era_sent) {
    spdlog::warn(
        "the server lost the stream after seed-era chunks of seq {} were "
        "applied; clearing them",
        seq);
    static constexpr Tier kAllTiers[] = {Tier::kHbm, Tier::kDram, Tier::kSsd};
    // A stop or a permanent error ends the retries; the stream is then
    // unsynchronised all the same.
    (void)SendSeedEra(ClearRequests(header_, seq, kAllTiers));
  }
  StateLoss(why);
}

}  // namespace kvindexer::bridge
