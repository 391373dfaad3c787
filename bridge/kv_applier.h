// Where the bridge sends its apply requests. The production implementation
// is IndexerClient (gRPC); tests substitute fakes.
#ifndef KVINDEXER_BRIDGE_KV_APPLIER_H_
#define KVINDEXER_BRIDGE_KV_APPLIER_H_

#include "absl/status/status.h"
#include "kv_indexer.pb.h"

namespace kvindexer::bridge {

class KvApplier {
 public:
  virtual ~KvApplier() = default;
  // Sends one request and returns the server's status, with gRPC codes
  // mapped one to one onto absl codes.
  [[nodiscard]] virtual absl::Status Apply(
      const kv_indexer::v1::ApplyExternalKvBatchRequest& request) = 0;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_KV_APPLIER_H_
