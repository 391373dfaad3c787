// QueueLimits: how many calls each of the server's work queues may hold
// (docs/configuration.md, "Queues and connections"; docs/contract.md,
// "Limits"). A call that finds its queue full is answered
// RESOURCE_EXHAUSTED at once, before anything about it has run
// (server/queue_refusal.h), and counted in
// kvindexer_queue_rejections_total{queue}.
//
// | Variable                     | Default | Queue                            |
// | KV_INDEXER_APPLY_QUEUE_MAX   | 1024    | mutations waiting for the apply  |
// |                              |         | thread; also bounds the answers  |
// |                              |         | waiting for the log's sync       |
// | KV_INDEXER_LOOKUP_QUEUE_MAX  | 1024    | MatchExternalKv and              |
// |                              |         | GetExternalKvHitCounts waiting   |
// |                              |         | for a lookup thread              |
// | KV_INDEXER_ADMIN_QUEUE_MAX   | 64      | admin calls waiting for the      |
// |                              |         | admin thread                     |
//
// Each accepts decimal digits, 1..1048576; unset or blank keeps the default.
// Prefix scans need no variable of their own: every queued scan holds one
// of the KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT admission permits.
#ifndef KVINDEXER_SERVER_QUEUE_CONFIG_H_
#define KVINDEXER_SERVER_QUEUE_CONFIG_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/env.h"

namespace kvindexer {

inline constexpr std::string_view kApplyQueueMaxVar =
    "KV_INDEXER_APPLY_QUEUE_MAX";
inline constexpr std::string_view kLookupQueueMaxVar =
    "KV_INDEXER_LOOKUP_QUEUE_MAX";
inline constexpr std::string_view kAdminQueueMaxVar =
    "KV_INDEXER_ADMIN_QUEUE_MAX";

// One mutation per bridge is the usual load (a bridge waits for each answer
// before it sends the next), so the default leaves room for a thousand
// workers whose bridges all send at the same instant.
inline constexpr uint32_t kDefaultApplyQueueMax = 1024;
inline constexpr uint32_t kDefaultLookupQueueMax = 1024;
// Operators' calls: a handful at a time.
inline constexpr uint32_t kDefaultAdminQueueMax = 64;
// Beyond this a queue is as good as unbounded.
inline constexpr uint32_t kMaxQueueLimit = 1048576;

struct QueueLimits {
  uint32_t apply = kDefaultApplyQueueMax;
  uint32_t lookup = kDefaultLookupQueueMax;
  uint32_t admin = kDefaultAdminQueueMax;
};

// Reads the three variables; unset or blank ones keep their defaults.
[[nodiscard]] absl::StatusOr<QueueLimits> LoadQueueLimits(const EnvLookup& env);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_QUEUE_CONFIG_H_
