// StagingLimits: the bounds on staged snapshots (fleet-protocol.md, section
// 6.3), read at start-up from the variables named next to them
// (server/staging_config.h) and named in the status message of every Begin
// they refuse.
#ifndef KVINDEXER_CORE_STAGING_LIMITS_H_
#define KVINDEXER_CORE_STAGING_LIMITS_H_

#include <cstdint>
#include <string_view>

namespace kvindexer {

inline constexpr std::string_view kStagingMaxPlacementsVar =
    "KV_INDEXER_STAGING_MAX_PLACEMENTS";
inline constexpr std::string_view kStagingMaxTransactionsVar =
    "KV_INDEXER_STAGING_MAX_TRANSACTIONS";
inline constexpr std::string_view kStagingIdleTimeoutMsVar =
    "KV_INDEXER_STAGING_IDLE_TIMEOUT_MS";

// A staged placement takes 24 bytes, so the default bounds staging near
// 480 MB: two concurrent transfers of 10,000,000 placements, the most a
// snapshot-v2 worker sends.
inline constexpr uint32_t kDefaultStagingMaxPlacements = 20'000'000;
// At 50,000,000 a single commit's log record (about 10 bytes a placement)
// stays well inside the record framing and protobuf's 2 GiB message limit.
inline constexpr uint32_t kMaxStagingMaxPlacements = 50'000'000;
// One open transaction per stream that is installing a snapshot at once.
inline constexpr uint32_t kDefaultStagingMaxTransactions = 256;
inline constexpr uint32_t kDefaultStagingIdleTimeoutMs = 60'000;
inline constexpr uint32_t kMinStagingIdleTimeoutMs = 1'000;
inline constexpr uint32_t kMaxStagingIdleTimeoutMs = 3'600'000;

struct StagingLimits {
  // Placements reserved by all open transactions together.
  uint32_t max_placements = kDefaultStagingMaxPlacements;
  // Open transactions at once.
  uint32_t max_transactions = kDefaultStagingMaxTransactions;
  // A transaction with no Begin or Append for this long expires; a
  // committed or cancelled one is remembered this long.
  uint32_t idle_timeout_ms = kDefaultStagingIdleTimeoutMs;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_STAGING_LIMITS_H_
