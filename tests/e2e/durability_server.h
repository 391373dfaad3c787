// The real kv-indexer-server with a data directory (docs/durability.md), as
// the durability e2e tests start it: KV_INDEXER_DATA_DIR and the two tuning
// variables set, 127.0.0.1 on a port of its choice, ready once a real RPC
// succeeds; and the line in which it says what it recovered
// (tests/support/recovered_line.h).
//
// Thread safety: one DurableServer is driven by one thread, except that
// stub() may be used from another thread while this one only signals the
// process (ServerProcess::Signal reads nothing the waits write).
#ifndef KVINDEXER_TESTS_E2E_DURABILITY_SERVER_H_
#define KVINDEXER_TESTS_E2E_DURABILITY_SERVER_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "kv_indexer.grpc.pb.h"
#include "tests/support/recovered_line.h"
#include "tests/support/server_process.h"

namespace kvindexer::e2e {

using namespace std::chrono_literals;

// Bounds of waits that normally end within milliseconds; recovery of a
// test's few megabytes included. The machine may be busy.
inline constexpr std::chrono::milliseconds kDurableStartBound = 30s;
inline constexpr std::chrono::milliseconds kDurableExitBound = 30s;

struct DurableServerOptions {
  std::string data_dir;           // KV_INDEXER_DATA_DIR; empty: unset
  std::string wal_sync;           // KV_INDEXER_WAL_SYNC; empty: unset
  uint64_t checkpoint_bytes = 0;  // KV_INDEXER_CHECKPOINT_BYTES; 0: unset
  // RLIMIT_FSIZE of the server (ProcessOptions::file_size_limit).
  std::optional<uint64_t> file_size_limit;
  std::map<std::string, std::string> extra_env;  // applied last
};

using test_support::FindRecoveredLine;
using test_support::RecoveredLine;

class DurableServer {
 public:
  // Starts the server and waits until it is ready. nullptr, with a gtest
  // failure quoting the server's output, when it does not become ready.
  static std::unique_ptr<DurableServer> Start(
      const DurableServerOptions& options);

  test_support::ServerProcess& process() { return *process_; }
  ::kv_indexer::v1::KVIndexer::Stub& stub() { return *stub_; }
  const std::string& address() const { return address_; }

  // The recovery line, which must come before the listening line (R71:
  // recovery before service). nullopt, with a gtest failure, otherwise.
  std::optional<RecoveredLine> Recovered();

  // SIGTERM; the server must exit 0.
  void Stop();

 private:
  DurableServer() = default;
  std::unique_ptr<test_support::ServerProcess> process_;
  std::unique_ptr<::kv_indexer::v1::KVIndexer::Stub> stub_;
  std::string address_;
};

// Runs the server with `options` on 127.0.0.1:0 and waits for it to exit
// (a start-up that must fail). `status` is nullopt when it did not exit
// within kDurableExitBound (it is killed then).
struct ServerExit {
  std::optional<test_support::ExitStatus> status;
  std::string output;
};
ServerExit RunServerToExit(const DurableServerOptions& options);

// A client context with a deadline `timeout` from now.
std::unique_ptr<grpc::ClientContext> Deadline(
    std::chrono::milliseconds timeout = 10s);

}  // namespace kvindexer::e2e

#endif  // KVINDEXER_TESTS_E2E_DURABILITY_SERVER_H_
