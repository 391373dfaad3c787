// The gRPC side of the bridge: a kv_indexer.v1 channel to the indexer,
// connected eagerly with a 5 s connect timeout, sending applies with a 10 s
// deadline each (docs/bridge-events.md, "Sending and errors > Connection").
//
// Thread safety: Apply() and Replace() must not be called concurrently (the
// bridge sends one request at a time); the shutdown signal may cancel it from
// any thread.
#ifndef KVINDEXER_BRIDGE_INDEXER_CLIENT_H_
#define KVINDEXER_BRIDGE_INDEXER_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "bridge/kv_applier.h"
#include "bridge/stop_request.h"
#include "common/client_channel.h"
#include "kv_indexer.grpc.pb.h"

namespace kvindexer::bridge {

class IndexerClient final : public KvApplier {
 public:
  // Parses `endpoint`, creates the channel and waits until it is connected.
  // Every failure (unusable endpoint, nothing listening, timeout, shutdown)
  // is returned as UNAVAILABLE: it is a transport error to retry.
  // `shutdown` must outlive the client. `security` (docs/security.md) turns
  // TLS on whatever the endpoint's scheme, and its write token goes on
  // every call.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<IndexerClient>> Connect(
      const std::string& endpoint, StopRequest* shutdown,
      std::chrono::milliseconds connect_timeout = std::chrono::seconds(5),
      std::chrono::milliseconds rpc_timeout = std::chrono::seconds(10),
      const ClientSecurity& security = ClientSecurity());

  // The channel Connect() uses, created without waiting for a connection
  // (calls wait for one). UNAVAILABLE when `endpoint` is unusable.
  [[nodiscard]] static absl::StatusOr<std::shared_ptr<grpc::Channel>>
  OpenChannel(const std::string& endpoint, const ClientSecurity& security);

  // A client over a shared channel: several clients, each with its own
  // `shutdown` (whose canceller slot it uses), may share one channel and
  // call concurrently with each other. `shutdown` must outlive the client.
  [[nodiscard]] static std::unique_ptr<IndexerClient> OnChannel(
      std::shared_ptr<grpc::Channel> channel, StopRequest* shutdown,
      std::chrono::milliseconds rpc_timeout, const ClientSecurity& security);

  // ConfigureExpectedWorkers; same status mapping as Apply().
  [[nodiscard]] absl::Status Configure(
      const kv_indexer::v1::ConfigureExpectedWorkersRequest& request,
      kv_indexer::v1::ConfigureExpectedWorkersResponse* response);

  absl::Status Apply(
      const kv_indexer::v1::ApplyExternalKvBatchRequest& request,
      kv_indexer::v1::ApplyExternalKvBatchResponse* response) override;
  absl::Status Heartbeat(
      const kv_indexer::v1::ApplyExternalKvBatchRequest& request,
      uint32_t ttl_ms,
      kv_indexer::v1::ApplyExternalKvBatchResponse* response) override;
  absl::Status Replace(
      const kv_indexer::v1::ReplaceExternalKvSnapshotRequest& request,
      kv_indexer::v1::ReplaceExternalKvSnapshotResponse* response) override;
  absl::Status BeginSnapshot(
      const kv_indexer::v1::BeginExternalKvSnapshotRequest& request,
      kv_indexer::v1::BeginExternalKvSnapshotResponse* response) override;
  absl::Status AppendSnapshot(
      const kv_indexer::v1::AppendExternalKvSnapshotRequest& request,
      kv_indexer::v1::AppendExternalKvSnapshotResponse* response) override;
  absl::Status CommitSnapshot(
      const kv_indexer::v1::CommitExternalKvSnapshotRequest& request,
      kv_indexer::v1::CommitExternalKvSnapshotResponse* response) override;
  absl::Status AbortSnapshot(
      const kv_indexer::v1::AbortExternalKvSnapshotRequest& request) override;
  void SetFidelity(std::string value) override { fidelity_ = std::move(value); }
  bool TakeEvicted() override { return std::exchange(evicted_, false); }

 private:
  // Runs one unary call with the RPC deadline, cancellable by shutdown,
  // with the heartbeat metadata when `heartbeat_ttl_ms` is not 0.
  template <typename Call>
  absl::Status RunCall(Call call, uint32_t heartbeat_ttl_ms = 0);

  IndexerClient(std::shared_ptr<grpc::Channel> channel, StopRequest* shutdown,
                std::chrono::milliseconds rpc_timeout, ClientSecurity security);

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<kv_indexer::v1::KVIndexer::Stub> stub_;
  StopRequest* shutdown_;
  std::chrono::milliseconds rpc_timeout_;
  const ClientSecurity security_;
  std::string fidelity_;  // kFidelityHeader's value; empty: not sent
  bool evicted_ = false;  // an answer carried kEvictedHeader (TakeEvicted)
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_INDEXER_CLIENT_H_
