#include "durable/compactor.h"

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/stream_key.h"
#include "durable/checkpoint_file.h"
#include "durable/checkpoint_merge.h"
#include "durable/compaction_indexer.h"
#include "durable/data_dir.h"
#include "durable/image_backend.h"
#include "durable/posix_file.h"
#include "durable/recovery_replay.h"
#include "kv_indexer_state.pb.h"

namespace kvindexer::durable {
namespace {

// Makes room in `image` for what the job's sizes say it will hold.
void SizeImage(const CompactionJob& job, ImageBackend& image) {
  if (job.sizes == nullptr) {
    if (job.reserve_blocks > 0) image.ReserveBlocks(job.reserve_blocks);
    return;
  }
  BackendStats stats{};
  stats.struct_size = sizeof(BackendStats);
  job.sizes->GetStats(&stats);
  image.ReserveBlocks(stats.blocks + stats.blocks / 8);
  if (!job.counts_placements) return;
  image.SetHoldingSizes([&job](std::string_view worker, uint64_t* counts) {
    // Only a count the backend vouches for is used: after a failure the
    // holding grows as it goes.
    const BackendStatus s = job.sizes->CountPlacements(
        StringView{worker.data(), worker.size()}, counts, nullptr);
    if (s.code != BackendCode::kOk) {
      std::fill(counts, counts + kMaxTier + 1, uint64_t{0});
    }
  });
}

// The most blocks the logs may name for a merge: half the serving index,
// as far as the job tells its size (0: not known, no limit).
uint64_t MergeLimit(const CompactionJob& job) {
  if (job.sizes == nullptr) return job.reserve_blocks / 2;
  BackendStats stats{};
  stats.struct_size = sizeof(BackendStats);
  job.sizes->GetStats(&stats);
  return stats.blocks / 2;
}

// The whole image: the base checkpoint and the closed logs replayed into
// it, then all of it written through a new writer (*out).
absl::Status WriteWholeCheckpoint(const std::string& dir,
                                  const CompactionJob& job, FileIo* io,
                                  const BuildDeadline& stop,
                                  std::unique_ptr<CheckpointWriter>* out) {
  FileIo& files = io != nullptr ? *io : FileIo::Real();
  ImageBackend image;
  SizeImage(job, image);
  CompactionIndexer indexer(&image);
  DurableState& indexer_state = indexer.state();

  absl::StatusOr<CheckpointLoad> load =
      LoadCheckpoint(JoinPath(dir, CheckpointFileName(job.base)),
                     &indexer_state, &stop, files);
  if (!load.ok()) return load.status();
  if (absl::Status replayed =
          indexer.ReplayClosedLogs(dir, job.base, job.last_wal, stop, files);
      !replayed.ok()) {
    return replayed;
  }

  absl::StatusOr<std::unique_ptr<CheckpointWriter>> writer =
      CheckpointWriter::Begin(dir, job.target(), io);
  if (!writer.ok()) return writer.status();
  ChunkWriter chunks(writer->get(), stop);
  indexer_state.ExportHost(
      [&](const state::v1::CheckpointChunk& chunk) { chunks.Add(chunk); });
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
    chunks.Add(chunk);
  });
  if (!chunks.status().ok()) return chunks.status();
  *out = *std::move(writer);
  return absl::OkStatus();
}

}  // namespace

absl::Status BuildCheckpoint(const std::string& dir, const CompactionJob& job,
                             FileIo* io, const BuildDeadline& stop,
                             CheckpointFinish finish, BuildMethod method) {
  std::unique_ptr<CheckpointWriter> writer;
  bool merged = false;
  if (method == BuildMethod::kMergeWhenPossible) {
    absl::StatusOr<MergeOutcome> outcome =
        WriteMergedCheckpoint(dir, job, io, stop, MergeLimit(job), &writer);
    if (!outcome.ok()) return outcome.status();
    merged = *outcome == MergeOutcome::kWritten;
  }
  if (!merged) {
    absl::Status s = WriteWholeCheckpoint(dir, job, io, stop, &writer);
    if (!s.ok()) return s;
  }
  // Sealed, then asked once more: the last write and the sync can take long
  // on a slow disk, and a build that expired meanwhile publishes nothing.
  const std::string tmp = CheckpointTmpPath(dir, job.target());
  if (absl::Status sealed = writer->Seal(); !sealed.ok()) return sealed;
  if (stop.Expired()) {
    ::unlink(tmp.c_str());
    return BuildCancelled(stop);
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
