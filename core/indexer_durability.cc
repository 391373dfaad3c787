// The Indexer's DurableState face (core/durable_state.h; docs/durability.md):
// the log it appends to, the replay of logged mutations, and the host's part
// of a checkpoint. The appends themselves happen in the mutating calls
// (core/indexer.cc), each before its mutation takes effect.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/backend_status.h"
#include "core/indexer.h"
#include "core/request_batch.h"
#include "core/request_validation.h"
#include "core/stream_key.h"
#include "core/worker_batches.h"
#include "fmt/format.h"

namespace kvindexer {
namespace {

using state::v1::CheckpointChunk;
using state::v1::WalRecord;

// A replayed request is checked for its shape only: the contract's fixed
// limits, tiers and side arrays, which it met when it was logged. The
// configurable limits are not applied: they may have changed since, and the
// record took effect under the old ones (or under none: a record written
// before the epoch bound existed may hold an epoch of any length).
constexpr RequestLimits kShapeOnly{
    .max_worker_id_bytes = std::numeric_limits<uint32_t>::max(),
    .max_worker_address_bytes = std::numeric_limits<uint32_t>::max(),
    .max_worker_epoch_bytes = std::numeric_limits<uint32_t>::max(),
    .max_workers = std::numeric_limits<uint32_t>::max(),
    .max_prefix_answer_bytes = std::numeric_limits<uint32_t>::max(),
    .placement_bound = {}};

absl::Status Malformed(std::string_view what, std::string_view why) {
  return absl::InvalidArgumentError(
      fmt::format("state record ({}) is malformed: {}", what, why));
}

absl::Status Malformed(std::string_view what, const absl::Status& why) {
  return Malformed(
      what, std::string_view(why.message().data(), why.message().size()));
}

StringView ViewOf(std::string_view s) { return StringView{s.data(), s.size()}; }

}  // namespace

void Indexer::AttachLog(MutationLog* log) {
  MutationLock lock(*this);
  // Detaching a log closes the Indexer to mutations for good: one applied
  // now would be answered OK without being logged.
  if (log == nullptr && log_ != nullptr) log_closed_ = true;
  log_ = log;
}

absl::Status Indexer::Replay(const WalRecord& record) {
  switch (record.op_case()) {
    case WalRecord::kApply: {
      const v1::ApplyExternalKvBatchRequest& req = record.apply();
      StreamKey key;
      if (absl::Status s = ValidateApply(req, kShapeOnly, &key); !s.ok()) {
        return Malformed("apply", s);
      }
      const std::string id = EncodeStreamKey(key);
      const RequestBatch batch(req, id);
      v1::ApplyExternalKvBatchResponse resp;
      MutationLock lock(*this);
      return req.enforce_sequence()
                 ? ApplyGated(req, id, batch.view(), &resp, MutationOptions{},
                              Origin::kReplay)
                 : ApplySeedEra(req, id, batch.view(), &resp, MutationOptions{},
                                Origin::kReplay);
    }
    case WalRecord::kReplace: {
      const v1::ReplaceExternalKvSnapshotRequest& req = record.replace();
      StreamKey key;
      if (absl::Status s = ValidateReplace(req, kShapeOnly, &key); !s.ok()) {
        return Malformed("replace", s);
      }
      const std::string id = EncodeStreamKey(key);
      const SnapshotBatch batch(req, id);
      v1::ReplaceExternalKvSnapshotResponse resp;
      MutationLock lock(*this);
      return ReplaceLocked(req, id, batch.view(), &resp, MutationOptions{},
                           Origin::kReplay);
    }
    case WalRecord::kConfigure: {
      const v1::ConfigureExpectedWorkersRequest& req = record.configure();
      std::vector<StreamKey> keys;
      if (absl::Status s = ValidateConfigure(req, kShapeOnly, &keys); !s.ok()) {
        return Malformed("configure", s);
      }
      const ListedStreams listed(keys);
      v1::ConfigureExpectedWorkersResponse resp;
      MutationLock lock(*this);
      return ConfigureLocked(req, listed, &resp, Origin::kReplay);
    }
    case WalRecord::kInvalidate: {
      const v1::InvalidateWorkerRequest& req = record.invalidate();
      StreamKey key;
      if (absl::Status s = ValidateInvalidate(req, kShapeOnly, &key); !s.ok()) {
        return Malformed("invalidate", s);
      }
      MutationLock lock(*this);
      return InvalidateLocked(req, EncodeStreamKey(key), Origin::kReplay);
    }
    case WalRecord::kSnapshotCommit: {
      const state::v1::StagedSnapshotCommit& commit = record.snapshot_commit();
      if (!commit.has_stream_id()) {
        return Malformed("snapshot commit", "no stream_id");
      }
      const StreamKey key = StreamKeyOf(commit.stream_id());
      if (key.worker_id.empty()) {
        return Malformed("snapshot commit", "no worker_id");
      }
      // Sorted by tier, one entry per tier, side arrays full or empty.
      int32_t last_tier = 0;
      for (const v1::TierHashes& entry : commit.hashes_by_tier()) {
        const int32_t tier = static_cast<int32_t>(entry.tier());
        if (absl::Status s = ValidateTier(tier); !s.ok()) {
          return Malformed("snapshot commit", s);
        }
        if (tier <= last_tier) {
          return Malformed("snapshot commit", "tiers out of order");
        }
        last_tier = tier;
        const int n = entry.hashes_size();
        if ((entry.component_masks_size() != 0 &&
             entry.component_masks_size() != n) ||
            (entry.block_sizes_size() != 0 && entry.block_sizes_size() != n)) {
          return Malformed("snapshot commit",
                           "side arrays do not match the hashes");
        }
      }
      MutationLock lock(*this);
      return InstallStagedLocked(commit, EncodeStreamKey(key), Origin::kReplay);
    }
    case WalRecord::kLivenessClear: {
      if (record.liveness_clear().worker_id().empty()) {
        return Malformed("liveness clear", "no worker_id");
      }
      const std::string id = BackendIdOf(record.liveness_clear());
      MutationLock lock(*this);
      return ReplayLivenessClear(id);
    }
    case WalRecord::kRemoval: {
      const state::v1::WorkerRemoval& removal = record.removal();
      if (removal.worker_id().empty()) {
        return Malformed("removal", "no worker_id");
      }
      if (removal.reason() > static_cast<uint32_t>(RemovalReason::kReload)) {
        return Malformed("removal",
                         fmt::format("unknown reason {}", removal.reason()));
      }
      MutationLock lock(*this);
      return RemoveWorkerLocked(BackendIdOf(removal),
                                static_cast<RemovalReason>(removal.reason()),
                                Origin::kReplay);
    }
    case WalRecord::kMarker: {
      const state::v1::HeartbeatMarker& marker = record.marker();
      if (marker.worker_id().empty()) {
        return Malformed("marker", "no worker_id");
      }
      if (marker.ttl_ms() == 0) return Malformed("marker", "ttl_ms is 0");
      const std::string id = BackendIdOf(marker);
      MutationLock lock(*this);
      // Not a heartbeat of this run: the marker is re-armed, not counted.
      workers_.Touch(id);
      liveness_.Rearm(id, clock_->Now(),
                      std::chrono::milliseconds(marker.ttl_ms()));
      return absl::OkStatus();
    }
    case WalRecord::kEviction: {
      const state::v1::PlacementEviction& eviction = record.eviction();
      if (eviction.worker_id().empty()) {
        return Malformed("eviction", "no worker_id");
      }
      if (eviction.tier() < kTierHbm || eviction.tier() > kMaxTier) {
        return Malformed("eviction", fmt::format("tier {} is not supported",
                                                 eviction.tier()));
      }
      if (eviction.reason() == 0 || eviction.reason() > kMaxEvictionReason) {
        return Malformed("eviction",
                         fmt::format("unknown reason {}", eviction.reason()));
      }
      MutationLock lock(*this);
      return EvictLocked(BackendIdOf(eviction), eviction.tier(),
                         static_cast<EvictionReason>(eviction.reason()),
                         /*placements=*/0, Origin::kReplay);
    }
    case WalRecord::OP_NOT_SET:
      break;
  }
  return Malformed("log", "no operation");
}

absl::Status Indexer::ReplayLivenessClear(std::string_view worker_id) {
  // Without a record, the sweep only dropped the worker's expired marker.
  if (!workers_.Contains(worker_id)) {
    workers_.Touch(worker_id);
    liveness_.Unmark(worker_id);
    return absl::OkStatus();
  }
  bool cleared = false;
  return ClearExpired(LivenessTable::Expired{std::string(worker_id),
                                             MonotonicClock::Duration::zero()},
                      &cleared, Origin::kReplay);
}

absl::Status Indexer::Restore(const CheckpointChunk& chunk) {
  switch (chunk.part_case()) {
    case CheckpointChunk::kWorker: {
      const state::v1::WorkerState& state = chunk.worker();
      if (state.worker_id().empty()) {
        return Malformed("checkpoint worker", "no worker_id");
      }
      MutationLock lock(*this);
      WorkerRecord& record = workers_.FindOrAdd(BackendIdOf(state));
      const uint64_t incarnation = record.incarnation;
      record = WorkerRecord{};
      record.incarnation = incarnation;
      record.namespaced =
          state.has_stream_id() && !state.stream_id().namespace_().empty();
      record.meta =
          StreamMetadata{.generation = state.worker_generation(),
                         .model = state.model(),
                         .hash_schema_version = state.hash_schema_version(),
                         .page_size = state.page_size(),
                         .is_bigram = state.is_bigram()};
      record.address = state.address();
      if (state.has_cache_spec()) {
        record.spec = CacheSpecOf(state.cache_spec());
      }
      record.ready = state.ready();
      record.configured = state.configured();
      record.evicted = state.evicted();
      if (state.has_checkpoint()) {
        record.checkpoint = SequenceCheckpoint{state.epoch(), state.seq()};
      }
      return absl::OkStatus();
    }
    case CheckpointChunk::kMarker: {
      const state::v1::HeartbeatMarker& marker = chunk.marker();
      if (marker.worker_id().empty()) {
        return Malformed("checkpoint marker", "no worker_id");
      }
      if (marker.ttl_ms() == 0) {
        return Malformed("checkpoint marker", "ttl_ms is 0");
      }
      const std::string id = BackendIdOf(marker);
      MutationLock lock(*this);
      workers_.Touch(id);
      liveness_.Rearm(id, clock_->Now(),
                      std::chrono::milliseconds(marker.ttl_ms()));
      return absl::OkStatus();
    }
    case CheckpointChunk::kPlacements: {
      const state::v1::TierPlacements& part = chunk.placements();
      const size_t n = static_cast<size_t>(part.hashes_size());
      if (part.tier() < kTierHbm || part.tier() > kMaxTier) {
        return Malformed("checkpoint placements",
                         fmt::format("tier {} is not supported", part.tier()));
      }
      const auto aligned = [n](int size) {
        return size == 0 || static_cast<size_t>(size) == n;
      };
      if (!aligned(part.component_masks_size()) ||
          !aligned(part.block_sizes_size())) {
        return Malformed(
            "checkpoint placements",
            fmt::format("{} hashes with {} masks and {} sizes", n,
                        part.component_masks_size(), part.block_sizes_size()));
      }
      MutationLock lock(*this);
      // The backend record takes the host's address and spec, as every
      // batch the host composes does.
      const std::string id = BackendIdOf(part);
      const WorkerRecord* record = workers_.Find(id);
      // Noted, so that the placement bound counts the worker again.
      workers_.Touch(id);
      if (record == nullptr) {
        return Malformed(
            "checkpoint placements",
            fmt::format("worker {} has no record", part.worker_id()));
      }
      ActionView report{};
      report.type = kActionReport;
      report.tier = part.tier();
      report.hashes = HashSpan{part.hashes().data(), n};
      report.component_masks =
          U32Span{part.component_masks().data(),
                  static_cast<size_t>(part.component_masks_size())};
      report.block_sizes =
          U32Span{part.block_sizes().data(),
                  static_cast<size_t>(part.block_sizes_size())};
      ApplyBatchView batch{};
      batch.worker_id = ViewOf(id);
      batch.worker_address = ViewOf(record->address);
      batch.has_cache_spec = record->spec.has_value() ? 1 : 0;
      batch.cache_spec = record->spec.value_or(CacheSpec{});
      batch.actions = &report;
      batch.action_count = 1;
      return ToAbslStatus(ApplyToBackend(batch));
    }
    case CheckpointChunk::PART_NOT_SET:
      break;
  }
  return Malformed("checkpoint", "no part");
}

void Indexer::ExportHost(absl::FunctionRef<void(const CheckpointChunk&)> sink) {
  MutationLock lock(*this);
  // Read-only: through the const table, so that nothing is noted as
  // changed.
  const WorkerSequenceTable& table = workers_;
  std::vector<std::string> ids = table.WorkerIds();
  std::sort(ids.begin(), ids.end());
  CheckpointChunk chunk;
  for (const std::string& id : ids) {
    const WorkerRecord& record = *table.Find(id);
    state::v1::WorkerState* state = chunk.mutable_worker();
    state->Clear();
    SetStreamFields(id, state);
    state->set_worker_generation(record.meta.generation);
    state->set_model(record.meta.model);
    state->set_hash_schema_version(record.meta.hash_schema_version);
    state->set_page_size(record.meta.page_size);
    state->set_is_bigram(record.meta.is_bigram);
    state->set_address(record.address);
    if (record.spec.has_value()) {
      *state->mutable_cache_spec() = WireCacheSpecOf(*record.spec);
    }
    state->set_ready(record.ready);
    state->set_configured(record.configured);
    state->set_evicted(record.evicted);
    if (record.checkpoint.has_value()) {
      state->set_has_checkpoint(true);
      state->set_epoch(record.checkpoint->epoch);
      state->set_seq(record.checkpoint->seq);
    }
    sink(chunk);
  }
  for (const LivenessTable::MarkerTtl& marker : liveness_.MarkerTtls()) {
    state::v1::HeartbeatMarker* out = chunk.mutable_marker();
    out->Clear();
    SetStreamFields(marker.worker_id, out);
    out->set_ttl_ms(static_cast<uint32_t>(marker.ttl.count()));
    sink(chunk);
  }
}

size_t Indexer::worker_count() {
  MutationLock lock(*this);
  return workers_.size();
}

}  // namespace kvindexer
