// Where the bridge sends its requests. The production implementation is
// IndexerClient (gRPC); tests substitute fakes or an in-process indexer.
#ifndef KVINDEXER_BRIDGE_KV_APPLIER_H_
#define KVINDEXER_BRIDGE_KV_APPLIER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "common/fidelity_header.h"
#include "common/heartbeat_header.h"
#include "kv_indexer.pb.h"

namespace kvindexer::bridge {

class KvApplier {
 public:
  virtual ~KvApplier() = default;
  // The kFidelityHeader value (common/fidelity_header.h) the following Apply,
  // Heartbeat and Replace calls carry; empty for none. Not thread-safe with
  // those calls: the one engine that uses an applier calls both. Appliers that
  // do not send metadata ignore it.
  virtual void SetFidelity(std::string value) { (void)value; }
  // True when an OK answer since the last call carried kEvictedHeader
  // (common/eviction_header.h): the server's placement bound evicted
  // placements of the stream. Clears the flag. Appliers that read no
  // metadata say false.
  virtual bool TakeEvicted() { return false; }
  // Sends one apply and returns the server's status, with gRPC codes mapped
  // one to one onto absl codes. On OK, *response holds the server's answer
  // (applied_seq, duplicate). REQUIRES: response != nullptr.
  [[nodiscard]] virtual absl::Status Apply(
      const kv_indexer::v1::ApplyExternalKvBatchRequest& request,
      kv_indexer::v1::ApplyExternalKvBatchResponse* response) = 0;
  // Apply() with the request metadata kHeartbeatTtlHeader
  // (common/heartbeat_header.h): `ttl_ms` (the heartbeat of a worker; the
  // request itself is an ordinary empty apply). REQUIRES: ttl_ms > 0, response
  // != nullptr.
  [[nodiscard]] virtual absl::Status Heartbeat(
      const kv_indexer::v1::ApplyExternalKvBatchRequest& request,
      uint32_t ttl_ms,
      kv_indexer::v1::ApplyExternalKvBatchResponse* response) = 0;
  // Sends one ReplaceExternalKvSnapshot; same status mapping. A server
  // without the recovery RPCs answers UNIMPLEMENTED.
  [[nodiscard]] virtual absl::Status Replace(
      const kv_indexer::v1::ReplaceExternalKvSnapshotRequest& request,
      kv_indexer::v1::ReplaceExternalKvSnapshotResponse* response) = 0;
  // The staged snapshot RPCs of line A (docs/contract.md, "Streams >
  // Staged snapshots"); same status mapping. Appliers without them answer
  // UNIMPLEMENTED, as a server without them does.
  [[nodiscard]] virtual absl::Status BeginSnapshot(
      const kv_indexer::v1::BeginExternalKvSnapshotRequest& request,
      kv_indexer::v1::BeginExternalKvSnapshotResponse* response) {
    (void)request;
    (void)response;
    return absl::UnimplementedError("BeginExternalKvSnapshot");
  }
  [[nodiscard]] virtual absl::Status AppendSnapshot(
      const kv_indexer::v1::AppendExternalKvSnapshotRequest& request,
      kv_indexer::v1::AppendExternalKvSnapshotResponse* response) {
    (void)request;
    (void)response;
    return absl::UnimplementedError("AppendExternalKvSnapshot");
  }
  [[nodiscard]] virtual absl::Status CommitSnapshot(
      const kv_indexer::v1::CommitExternalKvSnapshotRequest& request,
      kv_indexer::v1::CommitExternalKvSnapshotResponse* response) {
    (void)request;
    (void)response;
    return absl::UnimplementedError("CommitExternalKvSnapshot");
  }
  [[nodiscard]] virtual absl::Status AbortSnapshot(
      const kv_indexer::v1::AbortExternalKvSnapshotRequest& request) {
    (void)request;
    return absl::UnimplementedError("AbortExternalKvSnapshot");
  }
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_KV_APPLIER_H_
