// StartReadyServer: a kv_indexer.v1 server process (kv-indexer-server) as
// the end-to-end tests start it, with a client stub, returned once the
// server answers a real RPC. The tests' own server classes (DurableServer,
// the bridge tests' IndexerUnderTest, ...) are built on it.
//
// Thread safety: what it returns is used as ServerProcess and a gRPC stub
// are (tests/support/server_process.h).
#ifndef KVINDEXER_TESTS_E2E_READY_SERVER_H_
#define KVINDEXER_TESTS_E2E_READY_SERVER_H_

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "kv_indexer.grpc.pb.h"
#include "tests/support/server_process.h"

namespace kvindexer::e2e {

struct ReadyServer {
  std::unique_ptr<test_support::ServerProcess> process;
  std::string address;  // "127.0.0.1:<port>"
  int port = 0;
  // To `address`, with no limit on the size of a received message.
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<::kv_indexer::v1::KVIndexer::Stub> stub;  // on `channel`
};

// Starts `options` as StartListeningServer does (`port` 0: the server picks
// one), then waits until the server answers GetExternalKvHitCounts (retried
// every 20 ms, each call with a 1 s deadline). Each of the two waits is
// bounded by `timeout`. The error quotes the server's output.
[[nodiscard]] absl::StatusOr<ReadyServer> StartReadyServer(
    test_support::ProcessOptions options, int port,
    std::chrono::milliseconds timeout);

}  // namespace kvindexer::e2e

#endif  // KVINDEXER_TESTS_E2E_READY_SERVER_H_
