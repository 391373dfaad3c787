// The server kv-indexer-operator-poll-bench measures: a kv-indexer-server
// spawned on a free 127.0.0.1 gRPC port with its metrics endpoint on a free
// 127.0.0.1 port (KV_INDEXER_METRICS_ADDR=127.0.0.1:0; the port is read from
// its "metrics http addr=" log line), and gRPC channels to it that each
// hold a TCP connection of their own.
//
// Thread safety: StartOperatorPollServer must run on the thread that stops
// the server (ServerProcess kills its child when that thread exits);
// ConnectChannel may be called from any thread.
#ifndef KVINDEXER_BENCH_OPERATOR_POLL_SERVER_H_
#define KVINDEXER_BENCH_OPERATOR_POLL_SERVER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "tests/support/server_process.h"

namespace kvindexer::bench {

struct OperatorPollServerOptions {
  std::string binary;      // kv-indexer-server
  std::string backend;     // KV_INDEXER_BACKEND; empty: the server's default
  std::string server_log;  // appended to; empty: a temporary file
  // KV_INDEXER_METRICS_WORKER_SERIES; negative: the server's default.
  int64_t worker_series = -1;
  std::chrono::milliseconds start_timeout{60'000};
};

struct OperatorPollServer {
  std::unique_ptr<test_support::ServerProcess> process;
  std::string address;  // gRPC, "127.0.0.1:<port>"
  int metrics_port = 0;
};

// Spawns the server in memory (no data directory), without a write token or
// TLS, whatever this process's environment says; the rest of the
// environment is passed on. Fails, quoting the server's output, when it
// does not listen on both ports within `start_timeout`.
[[nodiscard]] absl::StatusOr<OperatorPollServer> StartOperatorPollServer(
    const OperatorPollServerOptions& options);

// A channel to `address` on a TCP connection of its own (`name` tells
// channels apart), with no limit on message sizes, connected within
// `timeout`.
[[nodiscard]] absl::StatusOr<std::shared_ptr<grpc::Channel>> ConnectChannel(
    const std::string& address, const std::string& name,
    std::chrono::milliseconds timeout);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_OPERATOR_POLL_SERVER_H_
