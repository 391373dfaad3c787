// RequestBatch: the backend form of a validated ApplyExternalKvBatch
// request, each REPORT collapsed keep-last (core/hash_collapse.h). The
// Indexer builds one before it takes its mutation mutex, and again when it
// replays a logged apply (docs/durability.md).
//
// It views the request (worker id, address, REVOKE hashes and REPORTs
// without repeats) and owns only the collapsed copies of REPORTs with
// repeated hashes.
//
// Thread safety: none needed; each object is built and used by one thread.
#ifndef KVINDEXER_CORE_REQUEST_BATCH_H_
#define KVINDEXER_CORE_REQUEST_BATCH_H_

#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "core/hash_collapse.h"
#include "kv_indexer.pb.h"
#include "kvindexer/backend.h"

namespace kvindexer {

class RequestBatch {
 public:
  // `backend_id` is the stream's backend id (core/stream_key.h).
  // REQUIRES: req is valid (ValidateApply); req and backend_id outlive the
  // batch and stay unchanged.
  RequestBatch(const ::kv_indexer::v1::ApplyExternalKvBatchRequest& req,
               std::string_view backend_id);
  RequestBatch(const RequestBatch&) = delete;
  RequestBatch& operator=(const RequestBatch&) = delete;

  const ApplyBatchView& view() const { return view_; }

 private:
  absl::InlinedVector<ActionView, 16> actions_;
  // Buffers for REPORTs with repeated hashes.
  std::vector<ReportBuffer> buffers_;
  ApplyBatchView view_{};
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_REQUEST_BATCH_H_
