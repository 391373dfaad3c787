#include "durable/checkpoint_merge.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/stream_key.h"
#include "durable/compaction_indexer.h"
#include "durable/data_dir.h"
#include "durable/image_backend.h"
#include "durable/posix_file.h"
#include "durable/recovery_replay.h"
#include "durable/wal_reader.h"
#include "kv_indexer_state.pb.h"

namespace kvindexer::durable {
namespace {

using Blocks = absl::flat_hash_set<int64_t>;

template <typename Hashes>
void AddAll(const Hashes& hashes, Blocks& blocks) {
  for (const int64_t hash : hashes) blocks.insert(hash);
}

// Step 1: every hash the closed logs name; nullopt as soon as they are more
// than `max_blocks` (0: no limit).
absl::StatusOr<std::optional<Blocks>> BlocksNamed(const std::string& dir,
                                                  const CompactionJob& job,
                                                  FileIo& io,
                                                  const BuildDeadline& stop,
                                                  uint64_t max_blocks) {
  Blocks blocks;
  state::v1::WalRecord record;
  for (uint64_t g = job.base; g <= job.last_wal; ++g) {
    const std::string wal = JoinPath(dir, WalFileName(g));
    uint64_t index = 0;
    absl::StatusOr<WalScan> scan = ScanWal(
        wal, g, /*repair=*/false,
        [&](std::string_view payload) -> absl::Status {
          if (stop.Expired()) return BuildCancelled(stop);
          if (!record.ParseFromArray(payload.data(),
                                     static_cast<int>(payload.size()))) {
            return absl::InternalError(
                absl::StrCat("wal ", wal, ": record ", index,
                             " passed its checksum but does not parse"));
          }
          ++index;
          if (record.has_apply()) {
            for (const auto& action : record.apply().actions()) {
              AddAll(action.hashes(), blocks);
            }
          } else if (record.has_replace()) {
            for (const auto& tier : record.replace().hashes_by_tier()) {
              AddAll(tier.hashes(), blocks);
            }
          } else if (record.has_snapshot_commit()) {
            for (const auto& tier : record.snapshot_commit().hashes_by_tier()) {
              AddAll(tier.hashes(), blocks);
            }
          }
          if (max_blocks > 0 && blocks.size() > max_blocks) {
            return absl::ResourceExhaustedError("too many blocks to merge");
          }
          return absl::OkStatus();
        },
        io);
    if (absl::IsResourceExhausted(scan.status())) return std::nullopt;
    if (!scan.ok()) return scan.status();
    if (scan->torn) {
      return absl::DataLossError(absl::StrCat("closed log ", wal,
                                              " has a bad record at offset ",
                                              scan->torn_offset));
    }
  }
  return blocks;
}

// Where a placements part stands in the order every build writes: its
// stream's backend id, then its tier.
struct PartKey {
  std::string id;
  uint32_t tier = 0;

  bool operator==(const PartKey&) const = default;
  bool Before(std::string_view other_id, uint32_t other_tier) const {
    return id < other_id || (id == other_id && tier < other_tier);
  }
};

// Checks that the parts come in the build order: keys ascending, and the
// hashes of one key ascending across its parts.
class OrderCheck {
 public:
  // False when `part` (with backend id `id`) breaks the order.
  bool Next(const std::string& id, const state::v1::TierPlacements& part) {
    if (started_) {
      if (id == key_.id && part.tier() == key_.tier) {
        if (last_.has_value() && part.hashes_size() > 0 &&
            part.hashes(0) <= *last_) {
          return false;
        }
      } else if (!key_.Before(id, part.tier())) {
        return false;
      } else {
        last_.reset();
      }
    }
    started_ = true;
    key_.id = id;
    key_.tier = part.tier();
    for (int i = 1; i < part.hashes_size(); ++i) {
      if (part.hashes(i) <= part.hashes(i - 1)) return false;
    }
    if (part.hashes_size() > 0) last_ = part.hashes(part.hashes_size() - 1);
    return true;
  }

 private:
  bool started_ = false;
  PartKey key_;
  std::optional<int64_t> last_;  // the key's last hash so far
};

// What Restore would refuse in a placements part, checked here for the
// parts the merge copies without restoring them, so that the merge refuses
// what the whole build refuses: a tier outside 1..3, side arrays neither
// empty nor as long as the hashes, a worker without a record.
std::optional<std::string> Malformed(
    const state::v1::TierPlacements& part, const std::string& id,
    const absl::flat_hash_set<std::string>& workers) {
  const int n = part.hashes_size();
  if (part.tier() < kTierHbm || part.tier() > kMaxTier) {
    return absl::StrCat("tier ", part.tier(), " is not supported");
  }
  const auto aligned = [n](int size) { return size == 0 || size == n; };
  if (!aligned(part.component_masks_size()) ||
      !aligned(part.block_sizes_size())) {
    return absl::StrCat(n, " hashes with ", part.component_masks_size(),
                        " masks and ", part.block_sizes_size(), " sizes");
  }
  if (!workers.contains(id)) {
    return absl::StrCat("worker ", part.worker_id(), " has no record");
  }
  return std::nullopt;
}

// One (worker, tier) of the image, as the whole build would write it.
struct ImageHolding {
  PartKey key;
  std::vector<int64_t> hashes;
  std::vector<uint32_t> masks;
  std::vector<uint32_t> sizes;
};

std::vector<ImageHolding> Holdings(const ImageBackend& image) {
  std::vector<ImageHolding> out;
  image.ForEachTier(0, [&](const ImageBackend::TierView& view) {
    ImageHolding& holding = out.emplace_back();
    holding.key = PartKey{std::string(view.worker_id), view.tier};
    holding.hashes.assign(view.hashes.data,
                          view.hashes.data + view.hashes.size);
    holding.masks.assign(view.component_masks.data,
                         view.component_masks.data + view.component_masks.size);
    holding.sizes.assign(view.block_sizes.data,
                         view.block_sizes.data + view.block_sizes.size);
  });
  return out;
}

// Writes placements a (worker, tier) at a time, in parts of
// kHashesPerPart, as the whole build cuts them.
class PartEmitter {
 public:
  explicit PartEmitter(ChunkWriter& out) : out_(out) {}

  void Begin(const PartKey& key) {
    part_ = chunk_.mutable_placements();
    part_->Clear();
    SetStreamFields(key.id, part_);
    part_->set_tier(key.tier);
  }
  void Put(int64_t hash, uint32_t mask, uint32_t size) {
    part_->add_hashes(hash);
    part_->add_component_masks(mask);
    part_->add_block_sizes(size);
    if (part_->hashes_size() == static_cast<int>(kHashesPerPart)) Write();
  }
  void End() {
    if (part_->hashes_size() > 0) Write();
  }
  void PutAll(const ImageHolding& holding, size_t from = 0) {
    for (size_t i = from; i < holding.hashes.size(); ++i) {
      Put(holding.hashes[i], holding.masks[i], holding.sizes[i]);
    }
  }

 private:
  void Write() {
    out_.Add(chunk_);
    part_->clear_hashes();
    part_->clear_component_masks();
    part_->clear_block_sizes();
  }

  ChunkWriter& out_;
  state::v1::CheckpointChunk chunk_;
  state::v1::TierPlacements* part_ = nullptr;
};

// Step 4's walk: the base's placements in order, with the image's holdings
// merged in where their keys fall.
class PlacementMerge {
 public:
  PlacementMerge(const Blocks& blocks, const ImageBackend& image,
                 std::vector<ImageHolding> holdings, ChunkWriter& out)
      : blocks_(blocks),
        image_(image),
        holdings_(std::move(holdings)),
        emit_(out) {}

  // One part of the base, whose stream has backend id `id`.
  void Part(const std::string& id, const state::v1::TierPlacements& part) {
    if (!open_ || id != key_.id || part.tier() != key_.tier) {
      Close();
      key_ = PartKey{id, part.tier()};
      WriteHoldingsBefore(key_);
      open_ = true;
      cleared_ = image_.Cleared(id, part.tier());
      emit_.Begin(key_);
      if (next_ < holdings_.size() && holdings_[next_].key == key_) {
        merging_ = &holdings_[next_];
        at_ = 0;
      }
    }
    if (cleared_) return;
    const bool masks = part.component_masks_size() > 0;
    const bool sizes = part.block_sizes_size() > 0;
    for (int i = 0; i < part.hashes_size(); ++i) {
      const int64_t hash = part.hashes(i);
      if (blocks_.contains(hash)) continue;
      if (merging_ != nullptr) {
        size_t end = at_;
        while (end < merging_->hashes.size() && merging_->hashes[end] < hash) {
          ++end;
        }
        for (; at_ < end; ++at_) {
          emit_.Put(merging_->hashes[at_], merging_->masks[at_],
                    merging_->sizes[at_]);
        }
      }
      emit_.Put(hash, masks ? part.component_masks(i) : 0,
                sizes ? part.block_sizes(i) : 0);
    }
  }

  // After the base's last part.
  void Finish() {
    Close();
    for (; next_ < holdings_.size(); ++next_) WriteHolding(holdings_[next_]);
  }

 private:
  void Close() {
    if (!open_) return;
    if (merging_ != nullptr) {
      emit_.PutAll(*merging_, at_);
      merging_ = nullptr;
      ++next_;
    }
    emit_.End();
    open_ = false;
  }
  void WriteHoldingsBefore(const PartKey& key) {
    while (next_ < holdings_.size() &&
           holdings_[next_].key.Before(key.id, key.tier)) {
      WriteHolding(holdings_[next_++]);
    }
  }
  void WriteHolding(const ImageHolding& holding) {
    emit_.Begin(holding.key);
    emit_.PutAll(holding);
    emit_.End();
  }

  const Blocks& blocks_;
  const ImageBackend& image_;
  const std::vector<ImageHolding> holdings_;
  PartEmitter emit_;
  size_t next_ = 0;  // the first holding not yet written
  bool open_ = false;
  PartKey key_;
  bool cleared_ = false;
  const ImageHolding* merging_ = nullptr;  // the holding of key_, if any
  size_t at_ = 0;                          // merging_'s next placement
};

absl::Status PartError(const std::string& path, uint64_t index,
                       std::string_view what) {
  return absl::InternalError(absl::StrCat("checkpoint ", path, ": part ", index,
                                          " ", std::string(what)));
}

}  // namespace

absl::StatusOr<MergeOutcome> WriteMergedCheckpoint(
    const std::string& dir, const CompactionJob& job, FileIo* io,
    const BuildDeadline& stop, uint64_t max_blocks,
    std::unique_ptr<CheckpointWriter>* out) {
  FileIo& files = io != nullptr ? *io : FileIo::Real();
  absl::StatusOr<std::optional<Blocks>> named =
      BlocksNamed(dir, job, files, stop, max_blocks);
  if (!named.ok()) return named.status();
  if (!named->has_value()) return MergeOutcome::kNotMergeable;
  const Blocks* const blocks = &**named;

  ImageBackend image;
  image.ReserveBlocks(blocks->size());
  image.RestrictTo(&*blocks);
  CompactionIndexer indexer(&image);
  DurableState& indexer_state = indexer.state();

  // Step 2. A part out of order, or more than half the placements in listed
  // blocks, ends the read (ABORTED, not an error): the whole build is then
  // the one to run (and the cheaper).
  const std::string base = JoinPath(dir, CheckpointFileName(job.base));
  state::v1::CheckpointChunk chunk;
  state::v1::CheckpointChunk kept;
  OrderCheck order;
  absl::flat_hash_set<std::string> workers;
  uint64_t index = 0;
  uint64_t placements = 0;
  uint64_t listed_placements = 0;
  absl::StatusOr<CheckpointRead> read = ReadCheckpoint(
      base,
      [&](std::string_view payload) -> absl::Status {
        if (stop.Expired()) return BuildCancelled(stop);
        if (!chunk.ParseFromArray(payload.data(),
                                  static_cast<int>(payload.size()))) {
          return PartError(base, index,
                           "passed its checksum but does not parse");
        }
        const state::v1::CheckpointChunk* restore = &chunk;
        if (chunk.has_worker()) workers.insert(BackendIdOf(chunk.worker()));
        if (chunk.has_placements()) {
          const state::v1::TierPlacements& part = chunk.placements();
          const std::string id = BackendIdOf(part);
          if (std::optional<std::string> bad = Malformed(part, id, workers)) {
            return PartError(base, index, absl::StrCat("was refused: ", *bad));
          }
          if (!order.Next(id, part)) return absl::AbortedError("out of order");
          placements += static_cast<uint64_t>(part.hashes_size());
          state::v1::TierPlacements* listed = kept.mutable_placements();
          listed->Clear();
          listed->set_worker_id(part.worker_id());
          if (part.has_stream_id()) {
            *listed->mutable_stream_id() = part.stream_id();
          }
          listed->set_tier(part.tier());
          const bool masks = part.component_masks_size() > 0;
          const bool sizes = part.block_sizes_size() > 0;
          for (int i = 0; i < part.hashes_size(); ++i) {
            if (!blocks->contains(part.hashes(i))) continue;
            listed->add_hashes(part.hashes(i));
            if (masks) listed->add_component_masks(part.component_masks(i));
            if (sizes) listed->add_block_sizes(part.block_sizes(i));
          }
          listed_placements += static_cast<uint64_t>(listed->hashes_size());
          restore = listed->hashes_size() > 0 ? &kept : nullptr;
        }
        if (restore != nullptr) {
          absl::Status s = indexer_state.Restore(*restore);
          if (!s.ok()) {
            return PartError(base, index,
                             absl::StrCat("was refused: ", s.ToString()));
          }
        }
        ++index;
        return absl::OkStatus();
      },
      files);
  if (absl::IsAborted(read.status())) return MergeOutcome::kNotMergeable;
  if (!read.ok()) return read.status();
  // Blocks shared by many workers can hold most placements while being few:
  // the image would then hold most of the index, and more than a whole
  // build's in all (the list and the merge's copy of it come on top). Below
  // a part's worth of placements it does not matter.
  if (listed_placements > placements / 2 &&
      listed_placements > kHashesPerPart) {
    return MergeOutcome::kNotMergeable;
  }
  const CheckpointRead first_read = *read;

  // Step 3.
  if (absl::Status replayed =
          indexer.ReplayClosedLogs(dir, job.base, job.last_wal, stop, files);
      !replayed.ok()) {
    return replayed;
  }
  if (image.touched_outside()) return MergeOutcome::kNotMergeable;

  // Step 4.
  absl::StatusOr<std::unique_ptr<CheckpointWriter>> writer =
      CheckpointWriter::Begin(dir, job.target(), io);
  if (!writer.ok()) return writer.status();
  ChunkWriter chunks(writer->get(), stop);
  indexer_state.ExportHost(
      [&](const state::v1::CheckpointChunk& host) { chunks.Add(host); });
  PlacementMerge merge(*blocks, image, Holdings(image), chunks);
  OrderCheck again;
  index = 0;
  read = ReadCheckpoint(
      base,
      [&](std::string_view payload) -> absl::Status {
        if (!chunks.status().ok()) return chunks.status();
        if (stop.Expired()) return BuildCancelled(stop);
        if (!chunk.ParseFromArray(payload.data(),
                                  static_cast<int>(payload.size()))) {
          return PartError(base, index,
                           "passed its checksum but does not parse");
        }
        ++index;
        if (!chunk.has_placements()) return absl::OkStatus();
        const std::string id = BackendIdOf(chunk.placements());
        // It was in order a moment ago: a file that changed since is not
        // one to build on.
        if (!again.Next(id, chunk.placements())) {
          return PartError(base, index - 1, "changed since it was read");
        }
        merge.Part(id, chunk.placements());
        return absl::OkStatus();
      },
      files);
  if (!read.ok()) return read.status();
  if (read->records != first_read.records || read->bytes != first_read.bytes) {
    return absl::InternalError(absl::StrCat(
        "checkpoint ", base, " changed between two reads of one build"));
  }
  merge.Finish();
  if (!chunks.status().ok()) return chunks.status();
  *out = *std::move(writer);
  return MergeOutcome::kWritten;
}

}  // namespace kvindexer::durable
