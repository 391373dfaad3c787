// Which requests are line-A requests (docs/contract.md, "Streams"): those
// that use a field or call only the newest upstream protocol has. A line-A
// request gets the line-A rules where they differ from ours; every other
// request keeps exactly the behaviour and answer bytes a seed-era client
// always had.
#ifndef KVINDEXER_CORE_LINE_A_H_
#define KVINDEXER_CORE_LINE_A_H_

#include "kv_indexer.pb.h"

namespace kvindexer {

inline bool IsLineA(const ::kv_indexer::v1::ApplyExternalKvBatchRequest& req) {
  return req.has_stream_id() || !req.worker_generation().empty();
}

inline bool IsLineA(
    const ::kv_indexer::v1::ReplaceExternalKvSnapshotRequest& req) {
  return req.has_stream_id() || !req.worker_generation().empty();
}

inline bool IsLineA(const ::kv_indexer::v1::ExpectedWorker& worker) {
  return worker.has_stream_id() || !worker.worker_generation().empty() ||
         !worker.model().empty() || worker.hash_schema_version() != 0 ||
         worker.page_size() != 0 || worker.is_bigram();
}

inline bool IsLineA(
    const ::kv_indexer::v1::ConfigureExpectedWorkersRequest& req) {
  for (const ::kv_indexer::v1::ExpectedWorker& worker : req.workers()) {
    if (IsLineA(worker)) return true;
  }
  return false;
}

// A coverage query: it names the router's eligible workers.
inline bool IsLineA(const ::kv_indexer::v1::MatchExternalKvPrefixRequest& req) {
  return req.eligible_worker_addresses_size() > 0 ||
         req.eligible_streams_size() > 0;
}

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_LINE_A_H_
