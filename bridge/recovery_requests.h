// The requests of the recovery cycle (docs/bridge-events.md, "Recovery >
// Primitives"): registration, PROBE, SEND (with the oversized-batch rule),
// INSTALL as a ReplaceExternalKvSnapshot (with the 8 MiB truncation rule)
// or, for a snapshot-v2 in multi-stream mode, as staged snapshot RPCs, and
// the seed-era requests legacy mode uses instead. Pure functions.
//
// Thread safety: pure functions.
#ifndef KVINDEXER_BRIDGE_RECOVERY_REQUESTS_H_
#define KVINDEXER_BRIDGE_RECOVERY_REQUESTS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bridge/action_builder.h"
#include "bridge/chunker.h"
#include "bridge/snapshot_source.h"
#include "common/wire_vocabulary.h"
#include "kv_indexer.pb.h"

namespace kvindexer::bridge {

// Registration: a seed-era apply with no actions and seq 0. Creates the
// worker record the gated RPCs require; changes nothing else.
kv_indexer::v1::ApplyExternalKvBatchRequest RegistrationRequest(
    const ApplyHeader& header);

// PROBE(epoch): a gated apply with seq 0 and no actions. A gated server
// answers `duplicate` with its checkpoint, or FAILED_PRECONDITION.
kv_indexer::v1::ApplyExternalKvBatchRequest ProbeRequest(
    const ApplyHeader& header, std::string_view epoch);

// SEND(seq, actions). With `gated_epoch`: the chunks of ChunkActions, all
// but the last as seed-era applies and the last one gated with that epoch;
// an empty action list still yields one gated apply with no actions, so the
// checkpoint advances. Without: the plain seed-era chunks (none for an empty
// list).
std::vector<kv_indexer::v1::ApplyExternalKvBatchRequest> SendRequests(
    const ActionList& actions, const ApplyHeader& header, uint64_t seq,
    const std::optional<std::string>& gated_epoch,
    const ChunkLimits& limits = {});

// Legacy mode: one seed-era apply clearing `clear_tiers`, in order. No
// request when the list is empty.
std::vector<kv_indexer::v1::ApplyExternalKvBatchRequest> ClearRequests(
    const ApplyHeader& header, uint64_t seq, std::span<const Tier> clear_tiers);

// Legacy INSTALL: ClearRequests followed by REPORTs of `placement`,
// chunked as usual. Not atomic.
std::vector<kv_indexer::v1::ApplyExternalKvBatchRequest> LegacyInstallRequests(
    const ApplyHeader& header, uint64_t seq, std::span<const Tier> clear_tiers,
    std::span<const kv_indexer::v1::TierHashes> placement,
    const ChunkLimits& limits = {});

struct InstallRequest {
  kv_indexer::v1::ReplaceExternalKvSnapshotRequest request;
  size_t hashes_total = 0;  // in the placement given
  size_t hashes_sent = 0;   // in `request`
  bool truncated() const { return hashes_sent < hashes_total; }
};

// Gated INSTALL(epoch, applied_seq, placement). When the request would not
// fit `max_bytes`, keeps the longest prefix of the placement (tier entries
// in order, hashes in order) that does.
InstallRequest BuildInstallRequest(
    const ApplyHeader& header, std::string_view epoch, uint64_t applied_seq,
    std::span<const kv_indexer::v1::TierHashes> placement,
    size_t max_bytes = kMaxRequestBytes);

// Line A's staged INSTALL (docs/bridge-events.md, "Many streams in one
// process > Snapshot-v2 installs"): a Begin declaring every placement, then
// the placements in order in Appends of at most `per_append` each (none for
// an empty placement), then a Commit of the transaction Begin opened. The
// Appends' transaction_id is left empty for the sender to fill in.
inline constexpr size_t kMaxPlacementsPerAppend = 16'384;

struct StagedInstallRequests {
  kv_indexer::v1::BeginExternalKvSnapshotRequest begin;
  std::vector<kv_indexer::v1::AppendExternalKvSnapshotRequest> appends;
};

// REQUIRES: header.stream_id is set; per_append > 0. Legacy entries of
// `placement` (no side arrays) become placements with mask and size 0.
StagedInstallRequests BuildStagedInstall(
    const ApplyHeader& header, std::string_view epoch, uint64_t applied_seq,
    std::string_view snapshot_id,
    const kv_indexer::v1::ExternalKvSnapshotMetadata& metadata,
    std::span<const kv_indexer::v1::TierHashes> placement,
    size_t per_append = kMaxPlacementsPerAppend);

// One REPORT at HBM of `hashes` with legacy (empty) side arrays: the
// placement a snapshot-v1 yields.
std::vector<kv_indexer::v1::TierHashes> SnapshotPlacement(
    std::span<const int64_t> hashes);

// The placement a snapshot-v2 yields: exactly what FOLD (recovery_fold.h)
// of the worker's live batches from seq 0 gives for the same holdings, so
// that a snapshot install and a replay install agree. Each record is a
// REPORT at its tier; tiers in order HBM, DRAM, SSD, records in their order
// within a tier, a repeated (hash, tier) kept at its first place with its
// last mask and size. `with_components` (a cache spec is configured: the
// worker's stores carry component labels) keeps each record's component
// mask and block size as side arrays; otherwise the entries are legacy, as
// the worker's unlabelled stores are on the live path.
std::vector<kv_indexer::v1::TierHashes> SnapshotV2Placement(
    std::span<const SnapshotBlock> blocks, bool with_components);

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_RECOVERY_REQUESTS_H_
