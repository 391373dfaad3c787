#include "replica/snapshot_image.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/indexer.h"
#include "core/sequence_gate_log.h"
#include "core/stream_key.h"
#include "core/worker_lifecycle_log.h"
#include "durable/image_backend.h"
#include "google/protobuf/io/coded_stream.h"
#include "kvindexer_fleet.pb.h"

namespace kvindexer::replica {
namespace {

// Placements per chunk: at most 8 + 5 + 5 bytes each (a hash, a mask and a
// size), so a chunk stays under 160 KiB and any part size from 256 KiB
// holds at least one.
constexpr size_t kHashesPerChunk = 8192;

// The image applies what the replicas already apply and log: its gate and
// lifecycle lines would only repeat theirs.
void Discard(spdlog::level::level_enum, std::string_view) {}

}  // namespace

struct SnapshotImage::State {
  explicit State(const RequestLimits& limits)
      : gate_log(Discard),
        lifecycle_log(Discard),
        indexer(&image, &gate_log, limits, kBackendAbiMinor, /*clock=*/nullptr,
                &lifecycle_log) {}

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

absl::Status SnapshotImage::Export(
    size_t max_part_bytes,
    absl::FunctionRef<absl::Status(std::string_view part, uint64_t chunks)>
        sink) {
  absl::Status status;
  ::kvindexer::fleet::v1::SnapshotPart part;
  size_t part_bytes = 0;
  std::string serialized;
  auto flush = [&]() {
    if (!status.ok() || part.chunks_size() == 0) return;
    serialized.clear();
    if (!part.SerializeToString(&serialized)) {
      status = absl::InternalError("a snapshot part does not serialise");
      return;
    }
    status = sink(serialized, static_cast<uint64_t>(part.chunks_size()));
    part.Clear();
    part_bytes = 0;
  };
  auto add = [&](const state::v1::CheckpointChunk& chunk) {
    if (!status.ok()) return;
    const size_t size = chunk.ByteSizeLong();
    // The field's tag and length prefix.
    const size_t framed =
        1 + google::protobuf::io::CodedOutputStream::VarintSize64(size) + size;
    if (framed > max_part_bytes) {
      status = absl::InvalidArgumentError(
          absl::StrCat("a snapshot chunk of ", framed,
                       " bytes exceeds the part size of ", max_part_bytes));
      return;
    }
    if (part_bytes + framed > max_part_bytes) flush();
    if (!status.ok()) return;
    *part.add_chunks() = chunk;
    part_bytes += framed;
  };
  state_->indexer.durable_state().ExportHost(add);
  state::v1::CheckpointChunk chunk;
  state_->image.ForEachTier(
      kHashesPerChunk, [&](const durable::ImageBackend::TierView& view) {
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
        add(chunk);
      });
  flush();
  return status;
}

}  // namespace kvindexer::replica
