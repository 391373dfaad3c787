// The kv_indexer.v1 vocabulary shared by the server, the bridge, the tools and
// the tests: storage tiers, action types, component bits, tier masks and the
// limits of the contract (docs/contract.md). Plain constants, no behaviour.
//
// kvindexer/backend.h carries the tier and action numbers again for backend
// authors, because that header is installed and must stay self-contained.
// wire_vocabulary.cc checks at compile time that it, the generated
// kv_indexer.v1 enums and this header agree, so the three cannot drift.
#ifndef KVINDEXER_COMMON_WIRE_VOCABULARY_H_
#define KVINDEXER_COMMON_WIRE_VOCABULARY_H_

#include <cstddef>
#include <cstdint>

namespace kvindexer {

// Storage tiers, numbered as kv_indexer.v1.TierType. TIER_UNKNOWN (0) is not
// a tier: a request naming it is invalid.
enum class Tier : uint8_t { kHbm = 1, kDram = 2, kSsd = 3 };

// The TierType number of `tier`.
constexpr uint32_t TierNumber(Tier tier) { return static_cast<uint32_t>(tier); }

// Tier masks (WorkerCacheSpec.full_tier_mask and its siblings) hold bit
// (1 << TierType) for each tier.
constexpr uint32_t TierBit(Tier tier) {
  return uint32_t{1} << TierNumber(tier);
}
inline constexpr uint32_t kTierBitHbm = TierBit(Tier::kHbm);    // 0x2
inline constexpr uint32_t kTierBitDram = TierBit(Tier::kDram);  // 0x4
inline constexpr uint32_t kTierBitSsd = TierBit(Tier::kSsd);    // 0x8
// The tiers a component can be served from, whatever a spec's masks say:
// HBM and DRAM. A spec's tier masks are intersected with this.
inline constexpr uint32_t kServableTierMask = kTierBitHbm | kTierBitDram;

// Action types, numbered as kv_indexer.v1.ExternalKvActionType.
// ACTION_UNKNOWN (0) is not an action type.
enum class ActionType : uint8_t {
  kReport = 1,
  kRevoke = 2,
  kClearAllAtTier = 3
};

// The ExternalKvActionType number of `type`.
constexpr uint32_t ActionNumber(ActionType type) {
  return static_cast<uint32_t>(type);
}

// Component bits, of WorkerCacheSpec.components and of the per-hash
// component masks of a REPORT. Other bits carry no meaning.
inline constexpr uint32_t kComponentFull = 1;
inline constexpr uint32_t kComponentSwa = 2;
inline constexpr uint32_t kComponentMamba = 4;

// The newest WorkerCacheSpec.version this build understands. A worker whose
// spec is newer is never reported as holding a reusable prefix.
inline constexpr uint32_t kSupportedSpecVersion = 1;

// MAX_HASHES_PER_REQUEST: bounds a whole apply batch (CLEAR actions
// included), each REPORT or REVOKE action, MatchExternalKv and
// GetExternalKvHitCounts. Prefix queries have no hash bound.
inline constexpr size_t kMaxHashesPerRequest = 16384;
// MAX_ACTIONS_PER_BATCH: actions in one ApplyExternalKvBatch request.
inline constexpr size_t kMaxActionsPerBatch = 256;
// Workers in one ConfigureExpectedWorkers request (a project limit).
inline constexpr size_t kMaxExpectedWorkers = 4096;
// MAX_GRPC_DECODING_MESSAGE_SIZE: a request of exactly this many bytes is
// served; a larger one is refused with OUT_OF_RANGE.
inline constexpr size_t kMaxRequestBytes = 8 * 1024 * 1024;
// MAX_CONCURRENT_STREAMS: HTTP/2 streams per connection.
inline constexpr int kMaxConcurrentStreams = 64;

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_WIRE_VOCABULARY_H_
