// NatsServer and NatsCluster: real nats-server processes with JetStream on
// loopback ports, for the tests of the JetStream event log
// (fleet/jetstream_event_log.h). Each server keeps its JetStream store in
// its own scratch directory, so Restart() finds the streams it had.
//
// Typical use (or SharedNatsServer() for a server the tests share):
//   KVINDEXER_SKIP_WITHOUT_NATS_SERVER();
//   absl::StatusOr<std::unique_ptr<NatsServer>> nats = NatsServer::Start();
//   ASSERT_TRUE(nats.ok()) << nats.status();
//   ... connect to (*nats)->url() ...
//   (*nats)->Kill(); ... ASSERT_TRUE((*nats)->Restart().ok());
//
// Starting waits, bounded, until the server answers its health endpoint
// (JetStream enabled and, in a cluster, a meta leader elected). Ports are
// found by binding port 0 and reading it back; when another process takes
// one first, the start is retried on fresh ports a few times.
//
// Thread safety: one object is used by one thread at a time; start servers
// from the test's main thread (see ServerProcess).
#ifndef KVINDEXER_TESTS_SUPPORT_NATS_SERVER_H_
#define KVINDEXER_TESTS_SUPPORT_NATS_SERVER_H_

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/server_process.h"

namespace kvindexer::test_support {

// The nats-server to run: $KV_INDEXER_TEST_NATS_SERVER when set, else
// /usr/sbin/nats-server or /usr/bin/nats-server when present; empty when
// there is none.
std::string NatsServerBinary();

inline constexpr char kNoNatsServerMessage[] =
    "nats-server is not installed (apt install nats-server, or set "
    "KV_INDEXER_TEST_NATS_SERVER)";

// Skips the current GoogleTest test when there is no nats-server.
#define KVINDEXER_SKIP_WITHOUT_NATS_SERVER()                           \
  do {                                                                 \
    if (::kvindexer::test_support::NatsServerBinary().empty()) {       \
      GTEST_SKIP() << ::kvindexer::test_support::kNoNatsServerMessage; \
    }                                                                  \
  } while (false)

// A free TCP port on 127.0.0.1 at the time of the call (another process may
// still take it before we use it).
[[nodiscard]] absl::StatusOr<int> PickFreeLoopbackPort();

// How a clustered node reaches its peers (NatsCluster fills it in).
struct NatsClusterMembership {
  std::string server_name;   // e.g. "n1"
  std::string cluster_name;  // the same on every node
  int cluster_port = 0;      // this node's route listener
  std::vector<int> peer_cluster_ports;
};

class NatsServer {
 public:
  // One standalone server with JetStream, on fresh ports. `extra_args` go
  // to nats-server as they are (e.g. {"--auth", token}).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<NatsServer>> Start(
      std::vector<std::string> extra_args = {},
      std::chrono::milliseconds timeout = std::chrono::seconds(20));
  ~NatsServer();
  NatsServer(const NatsServer&) = delete;
  NatsServer& operator=(const NatsServer&) = delete;

  // SIGTERM, then wait for the exit (SIGKILL after `timeout`).
  [[nodiscard]] absl::Status Stop(
      std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // SIGKILL, then reap: a crash.
  void Kill();
  // SIGSTOP / SIGCONT: a server that hangs, then recovers. Pause returns
  // once every thread of the server has stopped.
  bool Pause();
  bool Resume();
  // Stops the server when it runs (SIGKILL), then starts it again on the
  // same ports with the same store, and waits until it is ready.
  [[nodiscard]] absl::Status Restart(
      std::chrono::milliseconds timeout = std::chrono::seconds(20));
  bool Running();

  int port() const { return port_; }
  int monitor_port() const { return monitor_port_; }
  std::string url() const;  // "nats://127.0.0.1:<port>"
  // What the server has logged (for failure messages).
  std::string Output() const;

 private:
  friend class NatsCluster;
  NatsServer(std::unique_ptr<ScratchDir> dir,
             std::optional<NatsClusterMembership> membership,
             std::vector<std::string> extra_args);
  // Picks fresh ports (client, monitor, cluster when clustered).
  [[nodiscard]] absl::Status PickPorts();
  // Launches the process without waiting for readiness.
  [[nodiscard]] absl::Status Launch();
  // Waits until /healthz answers 200; fails early when the process exits.
  [[nodiscard]] absl::Status WaitReady(std::chrono::milliseconds timeout);

  std::unique_ptr<ScratchDir> dir_;
  std::optional<NatsClusterMembership> membership_;
  std::vector<std::string> extra_args_;
  int port_ = 0;
  int monitor_port_ = 0;
  std::unique_ptr<ServerProcess> process_;
};

// One standalone server for every test of the process that asks for it:
// started on the first call (from the test's main thread, as NatsServer
// requires) and stopped at exit. Tests on it keep apart by streams of their
// own (tests/support/jetstream_test_stream.h) and never stop, pause or
// restart it. When the start failed, every call answers its error.
[[nodiscard]] absl::StatusOr<NatsServer*> SharedNatsServer();

// Three clustered nodes, n1..n3, each with JetStream and its own store.
class NatsCluster {
 public:
  static constexpr int kNodes = 3;
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<NatsCluster>> Start(
      std::chrono::milliseconds timeout = std::chrono::seconds(30));

  // Every node's URL, comma-separated (KV_INDEXER_NATS_URL's format).
  std::string urls() const;
  std::vector<std::string> url_list() const;
  // REQUIRES: 0 <= i < kNodes.
  NatsServer& node(int i) { return *nodes_[static_cast<size_t>(i)]; }

 private:
  NatsCluster() = default;
  std::array<std::unique_ptr<NatsServer>, kNodes> nodes_;
};

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_NATS_SERVER_H_
