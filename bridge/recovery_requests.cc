#include "bridge/recovery_requests.h"

#include <algorithm>

#include "bridge/recovery_fold.h"
#include "google/protobuf/io/coded_stream.h"

namespace kvindexer::bridge {
namespace {

using google::protobuf::io::CodedOutputStream;
using kv_indexer::v1::ApplyExternalKvBatchRequest;
using kv_indexer::v1::TierHashes;

ApplyExternalKvBatchRequest EmptyRequest(const ApplyHeader& header,
                                         uint64_t seq) {
  ApplyExternalKvBatchRequest request;
  request.set_worker_id(header.worker_id);
  request.set_seq(seq);
  request.set_worker_address(header.worker_address);
  if (header.cache_spec) *request.mutable_cache_spec() = *header.cache_spec;
  if (header.stream_id) *request.mutable_stream_id() = *header.stream_id;
  if (!header.worker_generation.empty()) {
    request.set_worker_generation(header.worker_generation);
  }
  return request;
}

// Upper bound of what a TierHashes entry costs besides its elements: its
// own tag and length, the tier field, and three packed-field tags and
// lengths.
constexpr size_t kEntryOverhead = 6 + 2 + 3 * 6;

}  // namespace

ApplyExternalKvBatchRequest RegistrationRequest(const ApplyHeader& header) {
  return EmptyRequest(header, 0);
}

ApplyExternalKvBatchRequest ProbeRequest(const ApplyHeader& header,
                                         std::string_view epoch) {
  ApplyExternalKvBatchRequest request = EmptyRequest(header, 0);
  request.set_worker_epoch(std::string(epoch));
  request.set_enforce_sequence(true);
  return request;
}

std::vector<ApplyExternalKvBatchRequest> SendRequests(
    const ActionList& actions, const ApplyHeader& header, uint64_t seq,
    const std::optional<std::string>& gated_epoch, const ChunkLimits& limits) {
  std::vector<ApplyExternalKvBatchRequest> requests =
      ChunkActions(actions, header, seq, limits);
  if (!gated_epoch) return requests;
  if (requests.empty()) requests.push_back(EmptyRequest(header, seq));
  ApplyExternalKvBatchRequest& last = requests.back();
  last.set_worker_epoch(*gated_epoch);
  last.set_enforce_sequence(true);
  return requests;
}

std::vector<ApplyExternalKvBatchRequest> ClearRequests(
    const ApplyHeader& header, uint64_t seq,
    std::span<const Tier> clear_tiers) {
  ActionList actions;
  for (Tier tier : clear_tiers) {
    KvAction clear;
    clear.kind = ActionType::kClearAllAtTier;
    clear.tier = tier;
    actions.actions.push_back(clear);
  }
  return ChunkActions(actions, header, seq);
}

std::vector<ApplyExternalKvBatchRequest> LegacyInstallRequests(
    const ApplyHeader& header, uint64_t seq, std::span<const Tier> clear_tiers,
    std::span<const TierHashes> placement, const ChunkLimits& limits) {
  ActionList actions;
  for (Tier tier : clear_tiers) {
    KvAction clear;
    clear.kind = ActionType::kClearAllAtTier;
    clear.tier = tier;
    actions.actions.push_back(clear);
  }
  for (const TierHashes& entry : placement) {
    if (entry.hashes_size() == 0) continue;
    KvAction report;
    report.kind = ActionType::kReport;
    report.tier = static_cast<Tier>(entry.tier());
    report.hash_begin = actions.hashes.size();
    report.hash_count = static_cast<size_t>(entry.hashes_size());
    report.has_side_arrays = entry.component_masks_size() > 0;
    for (int i = 0; i < entry.hashes_size(); ++i) {
      actions.hashes.push_back(entry.hashes(i));
      actions.masks.push_back(report.has_side_arrays ? entry.component_masks(i)
                                                     : 0u);
      actions.sizes.push_back(report.has_side_arrays ? entry.block_sizes(i)
                                                     : 0u);
    }
    actions.actions.push_back(report);
  }
  return ChunkActions(actions, header, seq, limits);
}

InstallRequest BuildInstallRequest(const ApplyHeader& header,
                                   std::string_view epoch, uint64_t applied_seq,
                                   std::span<const TierHashes> placement,
                                   size_t max_bytes) {
  InstallRequest out;
  auto& request = out.request;
  request.set_worker_id(header.worker_id);
  request.set_worker_address(header.worker_address);
  request.set_worker_epoch(std::string(epoch));
  request.set_applied_seq(applied_seq);
  if (header.cache_spec) *request.mutable_cache_spec() = *header.cache_spec;
  if (header.stream_id) *request.mutable_stream_id() = *header.stream_id;
  if (!header.worker_generation.empty()) {
    request.set_worker_generation(header.worker_generation);
  }
  for (const TierHashes& entry : placement) {
    out.hashes_total += static_cast<size_t>(entry.hashes_size());
  }
  size_t budget_used = request.ByteSizeLong();
  bool full = false;
  for (const TierHashes& entry : placement) {
    if (full) break;
    const bool side = entry.component_masks_size() > 0;
    if (budget_used + kEntryOverhead > max_bytes) break;
    budget_used += kEntryOverhead;
    TierHashes* kept = request.add_hashes_by_tier();
    kept->set_tier(entry.tier());
    for (int i = 0; i < entry.hashes_size(); ++i) {
      size_t cost = sizeof(int64_t);
      if (side) {
        cost += CodedOutputStream::VarintSize32(entry.component_masks(i)) +
                CodedOutputStream::VarintSize32(entry.block_sizes(i));
      }
      if (budget_used + cost > max_bytes) {
        full = true;
        break;
      }
      budget_used += cost;
      kept->add_hashes(entry.hashes(i));
      if (side) {
        kept->add_component_masks(entry.component_masks(i));
        kept->add_block_sizes(entry.block_sizes(i));
      }
      ++out.hashes_sent;
    }
  }
  return out;
}

StagedInstallRequests BuildStagedInstall(
    const ApplyHeader& header, std::string_view epoch, uint64_t applied_seq,
    std::string_view snapshot_id,
    const kv_indexer::v1::ExternalKvSnapshotMetadata& metadata,
    std::span<const TierHashes> placement, size_t per_append) {
  StagedInstallRequests out;
  auto& begin = out.begin;
  if (header.stream_id) *begin.mutable_stream_id() = *header.stream_id;
  begin.set_worker_address(header.worker_address);
  begin.set_worker_epoch(std::string(epoch));
  begin.set_applied_seq(applied_seq);
  if (header.cache_spec) *begin.mutable_cache_spec() = *header.cache_spec;
  *begin.mutable_metadata() = metadata;
  begin.set_snapshot_id(std::string(snapshot_id));
  uint64_t total = 0;
  for (const TierHashes& entry : placement) {
    const bool side = entry.component_masks_size() > 0;
    for (int i = 0; i < entry.hashes_size(); ++i) {
      if (out.appends.empty() ||
          static_cast<size_t>(out.appends.back().placements_size()) >=
              per_append) {
        out.appends.emplace_back();
      }
      kv_indexer::v1::ExternalKvSnapshotPlacement* placed =
          out.appends.back().add_placements();
      placed->set_block_hash(entry.hashes(i));
      placed->set_tier(entry.tier());
      if (side) {
        placed->set_component_mask(entry.component_masks(i));
        placed->set_block_size(entry.block_sizes(i));
      }
      ++total;
    }
  }
  begin.set_expected_placements(total);
  return out;
}

std::vector<TierHashes> SnapshotPlacement(std::span<const int64_t> hashes) {
  std::vector<TierHashes> placement;
  if (hashes.empty()) return placement;
  TierHashes& entry = placement.emplace_back();
  entry.set_tier(kv_indexer::v1::TIER_HBM);
  entry.mutable_hashes()->Add(hashes.begin(), hashes.end());
  return placement;
}

std::vector<TierHashes> SnapshotV2Placement(
    std::span<const SnapshotBlock> blocks, bool with_components) {
  // The records as one batch of single-hash REPORTs, folded like live
  // batches: the fold's rules decide order, repeats and side arrays.
  ActionList reports;
  for (const SnapshotBlock& block : blocks) {
    KvAction report;
    report.kind = ActionType::kReport;
    report.tier = block.tier;
    report.hash_begin = reports.hashes.size();
    report.hash_count = 1;
    report.has_side_arrays = with_components;
    reports.actions.push_back(report);
    reports.hashes.push_back(block.hash);
    reports.masks.push_back(with_components ? block.component_mask : 0u);
    reports.sizes.push_back(with_components ? block.block_size : 0u);
  }
  FoldedPlacement placement;
  placement.Apply(reports);
  return placement.ToTierHashes();
}

}  // namespace kvindexer::bridge
