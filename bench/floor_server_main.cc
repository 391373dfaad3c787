// kv-indexer-floor-server: the transport floor for kv-indexer-bench.
//
// It serves kv_indexer.v1.KVIndexer with the same gRPC setup as
// kv-indexer-server (raw callback methods, ApplyTransportSettings) but every
// handler answers OK with an empty response without decoding the request. The
// query throughput the bench measures against it is the most the transport
// allows on this machine; kv-indexer-server's figure is compared with it.
//
// Environment: KV_INDEXER_LISTEN_ADDR (default [::1]:50052). Stops gracefully
// on SIGINT or SIGTERM.
#include <cstdio>
#include <memory>
#include <string>

#include "common/env.h"
#include "common/shutdown_signals.h"
#include "common/wire_vocabulary.h"
#include "grpcpp/grpcpp.h"
#include "kv_indexer.grpc.pb.h"
#include "server/server_runner.h"
#include "server/transport_settings.h"

namespace kvindexer::bench {
namespace {

namespace v1 = ::kv_indexer::v1;

using RawService = v1::KVIndexer::WithRawCallbackMethod_ApplyExternalKvBatch<
    v1::KVIndexer::WithRawCallbackMethod_MatchExternalKv<
        v1::KVIndexer::WithRawCallbackMethod_MatchExternalKvPrefix<
            v1::KVIndexer::WithRawCallbackMethod_GetExternalKvHitCounts<
                v1::KVIndexer::Service>>>>;

// Answers every call with an empty message; requests over the contract's
// 8 MiB are refused with OUT_OF_RANGE exactly as kv-indexer-server does.
class FloorService final : public RawService {
 public:
  using RawService::ApplyExternalKvBatch;
  using RawService::GetExternalKvHitCounts;
  using RawService::MatchExternalKv;
  using RawService::MatchExternalKvPrefix;

  grpc::ServerUnaryReactor* ApplyExternalKvBatch(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
      grpc::ByteBuffer* response) override {
    return Empty(context, request, response);
  }
  grpc::ServerUnaryReactor* MatchExternalKv(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
      grpc::ByteBuffer* response) override {
    return Empty(context, request, response);
  }
  grpc::ServerUnaryReactor* MatchExternalKvPrefix(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
      grpc::ByteBuffer* response) override {
    return Empty(context, request, response);
  }
  grpc::ServerUnaryReactor* GetExternalKvHitCounts(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
      grpc::ByteBuffer* response) override {
    return Empty(context, request, response);
  }

 private:
  static grpc::ServerUnaryReactor* Empty(grpc::CallbackServerContext* context,
                                         const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (request->Length() > kMaxRequestBytes) {
      reactor->Finish(
          grpc::Status(grpc::StatusCode::OUT_OF_RANGE, "request too large"));
      return reactor;
    }
    grpc::Slice empty;
    *response = grpc::ByteBuffer(&empty, 1);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

int Main() {
  // Before gRPC starts threads.
  const ShutdownSignals signals = ShutdownSignals::Block();
  const std::string addr =
      ProcessEnvironment()("KV_INDEXER_LISTEN_ADDR").value_or("[::1]:50052");
  if (!signals.active()) {
    std::fprintf(
        stderr,
        "kv-indexer-floor-server: %s; SIGINT and SIGTERM end it at once\n",
        signals.error().c_str());
  }

  FloorService service;
  grpc::ServerBuilder builder;
  ApplyTransportSettings(builder);
  int port = 0;
  builder.AddListeningPort(addr, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "kv-indexer-floor-server: cannot listen on %s\n",
                 addr.c_str());
    return 1;
  }
  // The same line as kv-indexer-server's, which is what a spawning process
  // reads the bound port from when it asked for port 0.
  std::fprintf(stderr, "kv-indexer-floor-server: listening addr=%s\n",
               kvindexer::BoundAddress(addr, port).c_str());
  if (!signals.Wait()) server->Wait();  // no signal handling: until killed
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  return 0;
}

}  // namespace
}  // namespace kvindexer::bench

int main() { return kvindexer::bench::Main(); }
