#include "replica/snapshot_image.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/indexer.h"
#include "core/sequence_gate_log.h"
#include "core/stream_key.h"
#include "core/worker_lifecycle_log.h"
#include "durable/image_backend.h"
#include "kvindexer_fleet.pb.h"
#include "replica/snapshot_part_packer.h"

namespace kvindexer::replica {
namespace {

// The image applies what the replicas already apply and log: its gate and
// lifecycle lines would only repeat theirs.
void Discard(spdlog::level::level_enum, std::string_view) {}

// An image follows the log as a replica does: index-wide evictions come
// from the log's records, whatever the limits it was given say.
RequestLimits ImageLimits(RequestLimits limits) {
  limits.placement_bound.index_bound_from_log = true;
  return limits;
}

}  // namespace

struct SnapshotImage::State {
  explicit State(const RequestLimits& limits)
      : gate_log(Discard),
        lifecycle_log(Discard),
        indexer(&image, &gate_log, ImageLimits(limits), kBackendAbiMinor,
                /*clock=*/nullptr, &lifecycle_log) {}

  durable::ImageBackend image;
  SequenceGateLog gate_log;
  WorkerLifecycleLog lifecycle_log;
  Indexer indexer;
};

SnapshotImage::SnapshotImage(const RequestLimits& limits)
    : state_(std::make_unique<State>(limits)) {}

SnapshotImage::~SnapshotImage() = default;

absl::Status SnapshotImage::LoadChunk(const state::v1::CheckpointChunk& chunk) {
  return state_->indexer.durable_state().Restore(chunk);
}

std::optional<RecordResult> SnapshotImage::Apply(
    const fleet::LoggedRecord& record) {
  return ApplyLogRecordAfter(state_->indexer, &position_, record);
}

std::optional<RecordResult> SnapshotImage::ApplyDecoded(
    uint64_t position, std::string_view worker_id,
    const ::kvindexer::fleet::v1::LogRecord& record) {
  if (position <= position_) return std::nullopt;
  position_ = position;
  return ApplyDecodedRecord(state_->indexer, worker_id, record);
}

void SnapshotImage::Pass(uint64_t position) {
  position_ = std::max(position_, position);
}

absl::Status SnapshotImage::Export(
    size_t max_part_bytes,
    absl::FunctionRef<absl::Status(std::string_view part, uint64_t chunks)>
        sink) {
  SnapshotPartPacker packer(max_part_bytes, sink);
  state_->indexer.durable_state().ExportHost(
      [&](const state::v1::CheckpointChunk& chunk) { packer.Add(chunk); });
  state::v1::CheckpointChunk chunk;
  state_->image.ForEachTier(
      kPlacementsPerChunk, [&](const durable::ImageBackend::TierView& view) {
        state::v1::TierPlacements* placements = chunk.mutable_placements();
        placements->Clear();
        SetStreamFields(view.worker_id, placements);
        placements->set_tier(view.tier);
        placements->mutable_hashes()->Add(view.hashes.data,
                                          view.hashes.data + view.hashes.size);
        placements->mutable_component_masks()->Add(
            view.component_masks.data,
            view.component_masks.data + view.component_masks.size);
        placements->mutable_block_sizes()->Add(
            view.block_sizes.data,
            view.block_sizes.data + view.block_sizes.size);
        packer.Add(chunk);
      });
  return packer.Finish();
}

}  // namespace kvindexer::replica
