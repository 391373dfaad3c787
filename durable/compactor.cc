#include "durable/compactor.h"

#include <unistd.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/indexer.h"
#include "core/request_limits.h"
#include "core/sequence_gate_log.h"
#include "core/stream_key.h"
#include "core/worker_lifecycle_log.h"
#include "durable/checkpoint_file.h"
#include "durable/data_dir.h"
#include "durable/image_backend.h"
#include "durable/posix_file.h"
#include "durable/recovery_replay.h"
#include "kv_indexer_state.pb.h"

namespace kvindexer::durable {
namespace {

// Placements per TierPlacements part (kv_indexer_state.proto).
constexpr size_t kHashesPerPart = 65536;

// The compaction's Indexer replays what the serving one already did and
// logged: its gate and lifecycle lines would only repeat them.
void Discard(spdlog::level::level_enum, std::string_view) {}

// Replay and Restore ignore the limits; they are set wide so that nothing a
// serving Indexer accepted under its own limits could trip them here.
RequestLimits WideLimits() {
  RequestLimits limits;
  limits.max_worker_id_bytes = std::numeric_limits<uint32_t>::max();
  limits.max_worker_address_bytes = std::numeric_limits<uint32_t>::max();
  limits.max_worker_epoch_bytes = std::numeric_limits<uint32_t>::max();
  limits.max_workers = std::numeric_limits<uint32_t>::max();
  return limits;
}

absl::Status Cancelled(const BuildDeadline& stop) {
  return absl::CancelledError(
      absl::StrCat("checkpoint abandoned: ", stop.Why()));
}

}  // namespace

absl::Status BuildCheckpoint(const std::string& dir, const CompactionJob& job,
                             FileIo* io, const BuildDeadline& stop,
                             CheckpointFinish finish) {
  ImageBackend image;
  if (job.sizes == nullptr) {
    if (job.reserve_blocks > 0) image.ReserveBlocks(job.reserve_blocks);
  } else {
    BackendStats stats{};
    stats.struct_size = sizeof(BackendStats);
    job.sizes->GetStats(&stats);
    image.ReserveBlocks(stats.blocks + stats.blocks / 8);
    if (job.counts_placements) {
      image.SetHoldingSizes([&job](std::string_view worker, uint64_t* counts) {
        // Only a count the backend vouches for is used: after a failure
        // the holding grows as it goes.
        const BackendStatus s = job.sizes->CountPlacements(
            StringView{worker.data(), worker.size()}, counts, nullptr);
        if (s.code != BackendCode::kOk) {
          std::fill(counts, counts + kMaxTier + 1, uint64_t{0});
        }
      });
    }
  }
  SequenceGateLog gate_log(Discard);
  WorkerLifecycleLog lifecycle_log(Discard);
  Indexer indexer(&image, &gate_log, WideLimits(), kBackendAbiMinor,
                  /*clock=*/nullptr, &lifecycle_log);
  DurableState& indexer_state = indexer.durable_state();

  absl::StatusOr<CheckpointLoad> load = LoadCheckpoint(
      JoinPath(dir, CheckpointFileName(job.base)), &indexer_state, &stop, *io);
  if (!load.ok()) return load.status();
  for (uint64_t g = job.base; g <= job.last_wal; ++g) {
    if (stop.Expired()) return Cancelled(stop);
    const std::string wal = JoinPath(dir, WalFileName(g));
    absl::StatusOr<WalScan> scan =
        ReplayWal(wal, g, /*repair=*/false, &indexer_state, &stop, *io);
    if (!scan.ok()) return scan.status();
    // A closed log was synced whole before the next one began; a bad
    // record in it is damage, which recovery, not a compaction, handles.
    if (scan->torn) {
      return absl::DataLossError(absl::StrCat("closed log ", wal,
                                              " has a bad record at offset ",
                                              scan->torn_offset));
    }
  }

  absl::StatusOr<std::unique_ptr<CheckpointWriter>> writer =
      CheckpointWriter::Begin(dir, job.target(), io);
  if (!writer.ok()) return writer.status();
  absl::Status status;
  std::string payload;
  auto add = [&](const state::v1::CheckpointChunk& chunk) {
    if (!status.ok()) return;
    if (stop.Expired()) {
      status = Cancelled(stop);
      return;
    }
    if (!chunk.SerializeToString(&payload)) {
      status = absl::InternalError("a checkpoint part does not serialise");
      return;
    }
    status = (*writer)->Add(payload);
  };
  indexer_state.ExportHost(add);
  state::v1::CheckpointChunk chunk;
  image.ForEachTier(kHashesPerPart, [&](const ImageBackend::TierView& view) {
    state::v1::TierPlacements* part = chunk.mutable_placements();
    part->Clear();
    SetStreamFields(view.worker_id, part);
    part->set_tier(view.tier);
    part->mutable_hashes()->Add(view.hashes.data,
                                view.hashes.data + view.hashes.size);
    part->mutable_component_masks()->Add(
        view.component_masks.data,
        view.component_masks.data + view.component_masks.size);
    part->mutable_block_sizes()->Add(
        view.block_sizes.data, view.block_sizes.data + view.block_sizes.size);
    add(chunk);
  });
  if (!status.ok()) return status;
  // Sealed, then asked once more: the last write and the sync can take long
  // on a slow disk, and a build that expired meanwhile publishes nothing.
  const std::string tmp = CheckpointTmpPath(dir, job.target());
  if (absl::Status sealed = (*writer)->Seal(); !sealed.ok()) return sealed;
  if (stop.Expired()) {
    ::unlink(tmp.c_str());
    return Cancelled(stop);
  }
  if (finish == CheckpointFinish::kSealOnly) return absl::OkStatus();
  absl::Status published = PublishCheckpoint(dir, job.target(), io);
  // A failed rename leaves the sealed file, which nobody would publish now;
  // after a failed directory sync it is already in place.
  if (!published.ok()) ::unlink(tmp.c_str());
  return published;
}

absl::Status WriteEmptyCheckpoint(const std::string& dir, uint64_t generation,
                                  FileIo* io) {
  absl::StatusOr<std::unique_ptr<CheckpointWriter>> writer =
      CheckpointWriter::Begin(dir, generation, io);
  if (!writer.ok()) return writer.status();
  return (*writer)->Commit();
}

}  // namespace kvindexer::durable
