#include "replica/commit_payload.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kv_indexer_state.pb.h"
#include "replica/snapshot_part_packer.h"
#include "spdlog/spdlog.h"

namespace kvindexer::replica {
namespace {

using ::kvindexer::fleet::v1::LogRecord;
namespace v1 = ::kv_indexer::v1;

// What a TierPlacements chunk adds to its placements: the tier, three
// field headers and length prefixes, the chunk's own framing.
constexpr size_t kChunkOverheadBytes = 64;
// The most bytes one placement takes in a chunk: a hash, a mask, a size.
constexpr size_t kPlacementBytes = 8 + 5 + 5;

// Copies [begin, end) of `from` to `to` when `from` holds one value per
// hash; leaves `to` empty when `from` is empty.
template <typename Field>
void CopySlice(const Field& from, int begin, int end, Field* to) {
  if (from.empty()) return;
  to->Add(from.begin() + begin, from.begin() + end);
}

}  // namespace

bool IsPayloadCommit(const LogRecord& record) {
  return record.has_snapshot_commit() && !record.payload_id().empty();
}

std::string NewPayloadId(std::string_view producer) {
  static std::atomic<uint64_t> counter{0};
  std::string id = "c-";
  for (char c : producer) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '_' || c == '-';
    id.push_back(ok ? c : '_');
  }
  absl::StrAppend(&id, "-", counter.fetch_add(1) + 1, "-",
                  std::chrono::system_clock::now().time_since_epoch().count());
  return id;
}

absl::StatusOr<LogRecord> StoreCommitPayload(fleet::SnapshotStore& store,
                                             std::string_view id,
                                             const LogRecord& record) {
  if (!record.has_snapshot_commit() || IsPayloadCommit(record)) {
    return absl::InvalidArgumentError(
        "only a staged snapshot commit in the inline form is stored as a "
        "payload");
  }
  const size_t max_part_bytes = store.max_part_bytes();
  if (max_part_bytes < kChunkOverheadBytes + kPlacementBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("snapshot store parts of ", max_part_bytes,
                     " bytes cannot hold a payload's placements"));
  }
  const int per_chunk = static_cast<int>(std::min<size_t>(
      kPlacementsPerChunk,
      (max_part_bytes - kChunkOverheadBytes) / kPlacementBytes));
  for (const v1::TierHashes& tier : record.snapshot_commit().hashes_by_tier()) {
    const int n = tier.hashes_size();
    if ((!tier.component_masks().empty() && tier.component_masks_size() != n) ||
        (!tier.block_sizes().empty() && tier.block_sizes_size() != n)) {
      return absl::InvalidArgumentError(
          "a staged snapshot commit whose side arrays do not match its "
          "hashes");
    }
  }

  absl::StatusOr<std::unique_ptr<fleet::SnapshotStore::PayloadWriter>> writer =
      store.BeginPayload(id);
  if (!writer.ok()) return writer.status();
  uint64_t parts = 0;
  uint64_t placements = 0;
  absl::Status stored;
  {
    SnapshotPartPacker packer(
        max_part_bytes,
        [&](std::string_view part, uint64_t /*chunks*/) -> absl::Status {
          ++parts;
          return (*writer)->AddPart(part);
        });
    state::v1::CheckpointChunk chunk;
    for (const v1::TierHashes& tier :
         record.snapshot_commit().hashes_by_tier()) {
      const int n = tier.hashes_size();
      // A tier without placements still gets its (empty) chunk.
      int begin = 0;
      do {
        const int end = std::min(n, begin + per_chunk);
        state::v1::TierPlacements* out = chunk.mutable_placements();
        out->Clear();
        out->set_tier(static_cast<uint32_t>(tier.tier()));
        out->mutable_hashes()->Add(tier.hashes().begin() + begin,
                                   tier.hashes().begin() + end);
        CopySlice(tier.component_masks(), begin, end,
                  out->mutable_component_masks());
        CopySlice(tier.block_sizes(), begin, end, out->mutable_block_sizes());
        packer.Add(chunk);
        placements += static_cast<uint64_t>(end - begin);
        begin = end;
      } while (begin < n);
    }
    stored = packer.Finish();
  }
  writer->reset();
  if (!stored.ok()) {
    if (absl::Status s = store.DeletePayload(id); !s.ok()) {
      spdlog::warn("cannot remove the parts of unfinished payload {}: {}", id,
                   s.ToString());
    }
    return stored;
  }
  LogRecord out = record;
  out.mutable_snapshot_commit()->clear_hashes_by_tier();
  out.set_payload_id(std::string(id));
  out.set_payload_parts(parts);
  out.set_payload_placements(placements);
  return out;
}

absl::StatusOr<LogRecord> FetchCommitPayload(fleet::SnapshotStore& store,
                                             const LogRecord& record) {
  if (!IsPayloadCommit(record)) {
    return absl::InvalidArgumentError(
        "not a staged snapshot commit in the payload form");
  }
  LogRecord out = record;
  state::v1::StagedSnapshotCommit* commit = out.mutable_snapshot_commit();
  commit->clear_hashes_by_tier();
  uint64_t placements = 0;
  ::kvindexer::fleet::v1::SnapshotPart part;
  absl::Status read = store.ReadPayload(
      record.payload_id(), record.payload_parts(),
      [&](std::string_view bytes) -> absl::Status {
        if (!part.ParseFromArray(bytes.data(),
                                 static_cast<int>(bytes.size()))) {
          return absl::DataLossError(absl::StrCat("a part of payload \"",
                                                  record.payload_id(),
                                                  "\" does not parse"));
        }
        for (const state::v1::CheckpointChunk& chunk : part.chunks()) {
          if (!chunk.has_placements()) {
            return absl::DataLossError(
                absl::StrCat("payload \"", record.payload_id(),
                             "\" holds something other than placements"));
          }
          const state::v1::TierPlacements& in = chunk.placements();
          const int tier_count = commit->hashes_by_tier_size();
          v1::TierHashes* tier =
              tier_count > 0 &&
                      static_cast<uint32_t>(
                          commit->hashes_by_tier(tier_count - 1).tier()) ==
                          in.tier()
                  ? commit->mutable_hashes_by_tier(tier_count - 1)
                  : commit->add_hashes_by_tier();
          tier->set_tier(static_cast<v1::TierType>(in.tier()));
          tier->mutable_hashes()->Add(in.hashes().begin(), in.hashes().end());
          tier->mutable_component_masks()->Add(in.component_masks().begin(),
                                               in.component_masks().end());
          tier->mutable_block_sizes()->Add(in.block_sizes().begin(),
                                           in.block_sizes().end());
          placements += static_cast<uint64_t>(in.hashes_size());
        }
        return absl::OkStatus();
      });
  if (!read.ok()) return read;
  if (placements != record.payload_placements()) {
    return absl::DataLossError(absl::StrCat(
        "payload \"", record.payload_id(), "\" holds ", placements,
        " placements, its log record says ", record.payload_placements()));
  }
  out.clear_payload_id();
  out.clear_payload_parts();
  out.clear_payload_placements();
  return out;
}

}  // namespace kvindexer::replica
