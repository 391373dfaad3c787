#include "tests/e2e/durability_server.h"

#include <signal.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/e2e/ready_server.h"

#ifndef KVINDEXER_SERVER_BINARY
#error "KVINDEXER_SERVER_BINARY must name the kv-indexer-server executable"
#endif

namespace kvindexer::e2e {
namespace {

using ::kvindexer::test_support::ProcessOptions;
using ::kvindexer::test_support::ServerProcess;

// The server's options: a cleaned environment, then `options`.
ProcessOptions ServerOptions(const DurableServerOptions& options) {
  ProcessOptions process;
  process.binary = KVINDEXER_SERVER_BINARY;
  process.unset_env = {"KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT",
                       "KV_INDEXER_BACKEND",
                       "KV_INDEXER_BACKEND_PATH",
                       "KV_INDEXER_ROBIN_MERGE_MIN_DELTA",
                       "KV_INDEXER_LIVENESS",
                       "KV_INDEXER_LIVENESS_SWEEP_MS",
                       "KV_INDEXER_DATA_DIR",
                       "KV_INDEXER_WAL_SYNC",
                       "KV_INDEXER_CHECKPOINT_BYTES",
                       "KV_INDEXER_CHECKPOINT_BUILDER",
                       "KV_INDEXER_CHECKPOINT_TIMEOUT_MS",
                       "KV_INDEXER_MAX_REPLAY_BYTES"};
  // The recovery line is INFO.
  process.env["KV_INDEXER_LOG_LEVEL"] = "info";
  if (!options.data_dir.empty()) {
    process.env["KV_INDEXER_DATA_DIR"] = options.data_dir;
  }
  if (!options.wal_sync.empty()) {
    process.env["KV_INDEXER_WAL_SYNC"] = options.wal_sync;
  }
  if (options.checkpoint_bytes > 0) {
    process.env["KV_INDEXER_CHECKPOINT_BYTES"] =
        std::to_string(options.checkpoint_bytes);
  }
  for (const auto& [name, value] : options.extra_env) {
    process.env[name] = value;
  }
  process.file_size_limit = options.file_size_limit;
  return process;
}

}  // namespace

std::unique_ptr<grpc::ClientContext> Deadline(
    std::chrono::milliseconds timeout) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + timeout);
  return context;
}

std::unique_ptr<DurableServer> DurableServer::Start(
    const DurableServerOptions& options) {
  absl::StatusOr<ReadyServer> ready =
      StartReadyServer(ServerOptions(options), /*port=*/0, kDurableStartBound);
  EXPECT_TRUE(ready.ok()) << ready.status();
  if (!ready.ok()) return nullptr;
  auto server = std::unique_ptr<DurableServer>(new DurableServer());
  server->process_ = std::move(ready->process);
  server->address_ = ready->address;
  server->stub_ = std::move(ready->stub);
  return server;
}

std::optional<RecoveredLine> DurableServer::Recovered() {
  const std::string output = process_->Output();
  std::optional<RecoveredLine> line = FindRecoveredLine(output);
  EXPECT_TRUE(line.has_value())
      << "no \"recovered ...\" line in the server's output:\n"
      << output;
  if (!line.has_value()) return std::nullopt;
  const size_t recovered_at = output.find(line->text);
  const size_t listening_at = output.find("listening addr=");
  EXPECT_LT(recovered_at, listening_at)
      << "the server listened before it had recovered:\n"
      << output;
  return line;
}

void DurableServer::Stop() {
  // An idle client does not answer the server's graceful GOAWAY ping; close
  // it so that the server need not wait for the ping's timeout.
  stub_.reset();
  const absl::Status stopped = process_->Stop(kDurableExitBound);
  EXPECT_TRUE(stopped.ok()) << stopped << "\n" << process_->Output();
}

ServerExit RunServerToExit(const DurableServerOptions& options) {
  ProcessOptions process = ServerOptions(options);
  process.env["KV_INDEXER_LISTEN_ADDR"] = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<ServerProcess>> started =
      ServerProcess::Start(std::move(process));
  EXPECT_TRUE(started.ok()) << started.status();
  if (!started.ok()) return {};
  ServerExit exit;
  exit.status = (*started)->WaitForExit(kDurableExitBound);
  exit.output = (*started)->Output();
  return exit;
}

}  // namespace kvindexer::e2e
