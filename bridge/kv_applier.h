// Where the bridge sends its requests. The production implementation is
// IndexerClient (gRPC); tests substitute fakes or an in-process indexer.
#ifndef KVINDEXER_BRIDGE_KV_APPLIER_H_
#define KVINDEXER_BRIDGE_KV_APPLIER_H_

#include "absl/status/status.h"
#include "kv_indexer.pb.h"

namespace kvindexer::bridge {

class KvApplier {
 public:
  virtual ~KvApplier() = default;
  // Sends one apply and returns the server's status, with gRPC codes mapped
  // one to one onto absl codes. On OK, *response holds the server's answer
  // (applied_seq, duplicate). REQUIRES: response != nullptr.
  [[nodiscard]] virtual absl::Status Apply(
      const kv_indexer::v1::ApplyExternalKvBatchRequest& request,
      kv_indexer::v1::ApplyExternalKvBatchResponse* response) = 0;
  // Sends one ReplaceExternalKvSnapshot; same status mapping. A server
  // without the recovery RPCs answers UNIMPLEMENTED.
  [[nodiscard]] virtual absl::Status Replace(
      const kv_indexer::v1::ReplaceExternalKvSnapshotRequest& request,
      kv_indexer::v1::ReplaceExternalKvSnapshotResponse* response) = 0;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_KV_APPLIER_H_
