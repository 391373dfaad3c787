// Indexer: the transport-independent kv_indexer.v1 semantics over any
// IndexBackend. It validates requests (docs/contract.md, "Apply validation",
// "Match validation" and "GetExternalKvHitCounts"; prefix queries arrive
// validated, see "MatchExternalKvPrefix > Order of checks"), normalises them
// (repeated-hash collapsing), calls the backend, and
// assembles responses (MatchExternalKv ordering, the prefix rule engine,
// result sorting). Deadline shedding and admission are the server's job.
//
// Thread safety: all methods may be called concurrently; the backend provides
// the snapshot isolation.
#ifndef KVINDEXER_CORE_INDEXER_H_
#define KVINDEXER_CORE_INDEXER_H_

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "core/prefix_answer.h"
#include "kv_indexer.pb.h"
#include "kvindexer/backend.h"

namespace kvindexer {

namespace v1 = ::kv_indexer::v1;

class Indexer {
 public:
  // REQUIRES: backend outlives the Indexer. OWNERSHIP: not taken.
  explicit Indexer(IndexBackend* backend);

  // A failed validation changes nothing.
  [[nodiscard]] absl::Status Apply(const v1::ApplyExternalKvBatchRequest& req);
  [[nodiscard]] absl::Status Match(const v1::MatchExternalKvRequest& req,
                                   v1::MatchExternalKvResponse* resp);
  // Scans and hands the answer to `deliver` (once, on OK) as views into the
  // query's own storage, so a caller can encode it without building the
  // response message. Unlike the other methods it does not validate: the
  // server validates a prefix query before admitting it, so that an invalid
  // one never takes a permit. REQUIRES: ValidatePrefix(req).ok().
  [[nodiscard]] absl::Status MatchPrefix(
      const v1::MatchExternalKvPrefixRequest& req,
      absl::FunctionRef<void(const PrefixAnswer&)> deliver);
  [[nodiscard]] absl::Status HitCounts(
      const v1::GetExternalKvHitCountsRequest& req,
      v1::GetExternalKvHitCountsResponse* resp);

 private:
  IndexBackend* backend_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_INDEXER_H_
