// Where the bridge sends its requests. The production implementation is
// IndexerClient (gRPC); tests substitute fakes or an in-process indexer.
#ifndef KVINDEXER_BRIDGE_KV_APPLIER_H_
#define KVINDEXER_BRIDGE_KV_APPLIER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "kv_indexer.pb.h"

namespace kvindexer::bridge {

// The gRPC request metadata key of a heartbeat; its value is the TTL in
// decimal milliseconds (docs/bridge-events.md, "Recovery > Worker
// liveness").
inline constexpr char kHeartbeatTtlMetadataKey[] =
    "kv-indexer-heartbeat-ttl-ms";

// The gRPC request metadata key that tells the indexer how faithful this
// bridge's feed is: "exact" or "degraded; <reason>" (docs/admin-api.md,
// "The fidelity header"). Advisory: the server only shows it.
inline constexpr char kFidelityMetadataKey[] = "kv-indexer-fidelity";

class KvApplier {
 public:
  virtual ~KvApplier() = default;
  // The kFidelityMetadataKey value the following Apply, Heartbeat and
  // Replace calls carry; empty for none. Not thread-safe with those calls:
  // the one engine that uses an applier calls both. Appliers that do not
  // send metadata ignore it.
  virtual void SetFidelity(std::string value) { (void)value; }
  // Sends one apply and returns the server's status, with gRPC codes mapped
  // one to one onto absl codes. On OK, *response holds the server's answer
  // (applied_seq, duplicate). REQUIRES: response != nullptr.
  [[nodiscard]] virtual absl::Status Apply(
      const kv_indexer::v1::ApplyExternalKvBatchRequest& request,
      kv_indexer::v1::ApplyExternalKvBatchResponse* response) = 0;
  // Apply() with the request metadata kHeartbeatTtlMetadataKey: `ttl_ms`
  // (the heartbeat of a worker; the request itself is an ordinary empty
  // apply). REQUIRES: ttl_ms > 0, response != nullptr.
  [[nodiscard]] virtual absl::Status Heartbeat(
      const kv_indexer::v1::ApplyExternalKvBatchRequest& request,
      uint32_t ttl_ms,
      kv_indexer::v1::ApplyExternalKvBatchResponse* response) = 0;
  // Sends one ReplaceExternalKvSnapshot; same status mapping. A server
  // without the recovery RPCs answers UNIMPLEMENTED.
  [[nodiscard]] virtual absl::Status Replace(
      const kv_indexer::v1::ReplaceExternalKvSnapshotRequest& request,
      kv_indexer::v1::ReplaceExternalKvSnapshotResponse* response) = 0;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_KV_APPLIER_H_
