#include "bridge/indexer_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/eviction_header.h"
#include "common/indexer_endpoint.h"

namespace kvindexer::bridge {
namespace {

// Wait in small slices so that shutdown interrupts a connect promptly.
constexpr auto kConnectSlice = std::chrono::milliseconds(100);

}  // namespace

IndexerClient::IndexerClient(std::shared_ptr<grpc::Channel> channel,
                             StopRequest* shutdown,
                             std::chrono::milliseconds rpc_timeout,
                             ClientSecurity security)
    : channel_(std::move(channel)),
      stub_(kv_indexer::v1::KVIndexer::NewStub(channel_)),
      shutdown_(shutdown),
      rpc_timeout_(rpc_timeout),
      security_(std::move(security)) {}

absl::StatusOr<std::unique_ptr<IndexerClient>> IndexerClient::Connect(
    const std::string& endpoint, StopRequest* shutdown,
    std::chrono::milliseconds connect_timeout,
    std::chrono::milliseconds rpc_timeout, const ClientSecurity& security) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> opened =
      OpenChannel(endpoint, security);
  if (!opened.ok()) return opened.status();
  std::shared_ptr<grpc::Channel> channel = *std::move(opened);

  const auto deadline = std::chrono::system_clock::now() + connect_timeout;
  while (true) {
    if (shutdown->triggered()) {
      return absl::UnavailableError("shutdown requested while connecting");
    }
    const auto now = std::chrono::system_clock::now();
    if (now >= deadline) {
      absl::StatusOr<GrpcTarget> target = ParseIndexerEndpoint(endpoint);
      return absl::UnavailableError(
          absl::StrCat("could not connect to the indexer at ", endpoint,
                       " (target ", target.ok() ? target->target : endpoint,
                       ") within ", connect_timeout.count(), " ms"));
    }
    const auto slice_end = std::min(deadline, now + kConnectSlice);
    if (channel->WaitForConnected(slice_end)) break;
  }
  return std::unique_ptr<IndexerClient>(
      new IndexerClient(std::move(channel), shutdown, rpc_timeout, security));
}

std::unique_ptr<IndexerClient> IndexerClient::OnChannel(
    std::shared_ptr<grpc::Channel> channel, StopRequest* shutdown,
    std::chrono::milliseconds rpc_timeout, const ClientSecurity& security) {
  return std::unique_ptr<IndexerClient>(
      new IndexerClient(std::move(channel), shutdown, rpc_timeout, security));
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> IndexerClient::OpenChannel(
    const std::string& endpoint, const ClientSecurity& security) {
  absl::StatusOr<GrpcTarget> target = ParseIndexerEndpoint(endpoint);
  if (!target.ok()) {
    return absl::UnavailableError(std::string(target.status().message()));
  }
  grpc::ChannelArguments args;
  // A private subchannel pool: a new connection after a failure must not
  // inherit the previous channel's reconnect backoff state.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // The channel's own reconnects are short (100 ms growing to 1 s) so that
  // an indexer that comes back is seen within about a second and the
  // recovery cycle can notice its lost state (docs/bridge-events.md,
  // "Recovery"). Calls wait for the channel to be ready (see RunCall), so
  // this backoff alone decides how soon a returning server is used. In this
  // gRPC release the "min" argument also bounds one
  // connect attempt; it grows with the backoff, so a slow handshake still
  // gets through after a few attempts. The bridge's teardown backoff
  // (bridge/backoff.h) is separate and unchanged.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return CreateClientChannel(target->target, security, target->use_tls, args);
}

template <typename Call>
absl::Status IndexerClient::RunCall(Call call, uint32_t heartbeat_ttl_ms) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + rpc_timeout_);
  AddWriteToken(security_, &context);
  if (heartbeat_ttl_ms != 0) {
    context.AddMetadata(std::string(kHeartbeatTtlHeader),
                        std::to_string(heartbeat_ttl_ms));
  }
  if (!fidelity_.empty())
    context.AddMetadata(std::string(kFidelityHeader), fidelity_);
  // Wait for a connection rather than fail at once while the channel is
  // between reconnect attempts: a call made while the indexer is down is
  // sent as soon as it is back, instead of after the recovery engine's own
  // retry backoff (up to 2 s) on top of the channel's. A call that never got
  // a connection ends with DEADLINE_EXCEEDED, which the engine treats as an
  // uncertain outcome and probes.
  context.set_wait_for_ready(true);
  shutdown_->SetCanceller([&context] { context.TryCancel(); });
  grpc::Status status = call(&context);
  shutdown_->ClearCanceller();
  if (status.ok()) {
    const auto& trailers = context.GetServerTrailingMetadata();
    if (trailers.find(grpc::string_ref(
            kEvictedHeader.data(), kEvictedHeader.size())) != trailers.end()) {
      evicted_ = true;
    }
    return absl::OkStatus();
  }
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

absl::Status IndexerClient::Apply(
    const kv_indexer::v1::ApplyExternalKvBatchRequest& request,
    kv_indexer::v1::ApplyExternalKvBatchResponse* response) {
  return RunCall([&](grpc::ClientContext* context) {
    return stub_->ApplyExternalKvBatch(context, request, response);
  });
}

absl::Status IndexerClient::Heartbeat(
    const kv_indexer::v1::ApplyExternalKvBatchRequest& request, uint32_t ttl_ms,
    kv_indexer::v1::ApplyExternalKvBatchResponse* response) {
  return RunCall(
      [&](grpc::ClientContext* context) {
        return stub_->ApplyExternalKvBatch(context, request, response);
      },
      ttl_ms);
}

absl::Status IndexerClient::Configure(
    const kv_indexer::v1::ConfigureExpectedWorkersRequest& request,
    kv_indexer::v1::ConfigureExpectedWorkersResponse* response) {
  return RunCall([&](grpc::ClientContext* context) {
    return stub_->ConfigureExpectedWorkers(context, request, response);
  });
}

absl::Status IndexerClient::Replace(
    const kv_indexer::v1::ReplaceExternalKvSnapshotRequest& request,
    kv_indexer::v1::ReplaceExternalKvSnapshotResponse* response) {
  return RunCall([&](grpc::ClientContext* context) {
    return stub_->ReplaceExternalKvSnapshot(context, request, response);
  });
}

absl::Status IndexerClient::BeginSnapshot(
    const kv_indexer::v1::BeginExternalKvSnapshotRequest& request,
    kv_indexer::v1::BeginExternalKvSnapshotResponse* response) {
  return RunCall([&](grpc::ClientContext* context) {
    return stub_->BeginExternalKvSnapshot(context, request, response);
  });
}

absl::Status IndexerClient::AppendSnapshot(
    const kv_indexer::v1::AppendExternalKvSnapshotRequest& request,
    kv_indexer::v1::AppendExternalKvSnapshotResponse* response) {
  return RunCall([&](grpc::ClientContext* context) {
    return stub_->AppendExternalKvSnapshot(context, request, response);
  });
}

absl::Status IndexerClient::CommitSnapshot(
    const kv_indexer::v1::CommitExternalKvSnapshotRequest& request,
    kv_indexer::v1::CommitExternalKvSnapshotResponse* response) {
  return RunCall([&](grpc::ClientContext* context) {
    return stub_->CommitExternalKvSnapshot(context, request, response);
  });
}

absl::Status IndexerClient::AbortSnapshot(
    const kv_indexer::v1::AbortExternalKvSnapshotRequest& request) {
  kv_indexer::v1::AbortExternalKvSnapshotResponse response;
  return RunCall([&](grpc::ClientContext* context) {
    return stub_->AbortExternalKvSnapshot(context, request, &response);
  });
}

}  // namespace kvindexer::bridge
