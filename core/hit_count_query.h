// GetExternalKvHitCounts (docs/contract.md, "GetExternalKvHitCounts"):
// request hashes collapsed keeping
// the first occurrence; one entry per hash that has a counter, in request
// order; a hash without a counter (or with a zero one) is left out.
#ifndef KVINDEXER_CORE_HIT_COUNT_QUERY_H_
#define KVINDEXER_CORE_HIT_COUNT_QUERY_H_

#include "absl/status/status.h"
#include "kv_indexer.pb.h"
#include "kvindexer/backend.h"

namespace kvindexer {

// REQUIRES: the request is valid (see ValidateHitCounts).
[[nodiscard]] absl::Status RunHitCounts(
    IndexBackend* backend,
    const ::kv_indexer::v1::GetExternalKvHitCountsRequest& req,
    ::kv_indexer::v1::GetExternalKvHitCountsResponse* resp);

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_HIT_COUNT_QUERY_H_
