// The answer to a call whose work queue is full (server/queue_config.h):
// RESOURCE_EXHAUSTED, given on gRPC's callback thread before the request is
// decoded, so nothing about the call has run or changed. The message names
// the queue, its bound and the variable that sets it, and says that a
// retry is safe. sgl-router treats RESOURCE_EXHAUSTED as "overloaded"; the
// bridge retries a refused mutation with its backoff (docs/bridge-events.md,
// "Sending and errors").
#ifndef KVINDEXER_SERVER_QUEUE_REFUSAL_H_
#define KVINDEXER_SERVER_QUEUE_REFUSAL_H_

#include <cstddef>
#include <string_view>

#include "grpcpp/support/status.h"

namespace kvindexer {

// The queues that refuse calls, named as in the metrics' `queue` label.
enum class WorkQueue { kApply, kLookup, kAdmin };
inline constexpr size_t kWorkQueueCount = 3;

// "apply", "lookup" or "admin".
std::string_view WorkQueueName(WorkQueue queue);
// The variable that bounds `queue` (KV_INDEXER_APPLY_QUEUE_MAX, ...).
std::string_view WorkQueueVariable(WorkQueue queue);

// RESOURCE_EXHAUSTED for a call refused by `queue`, full at `capacity`.
grpc::Status QueueFullRefusal(WorkQueue queue, size_t capacity);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_QUEUE_REFUSAL_H_
