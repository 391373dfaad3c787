// A loopback TCP port standing in for a worker's HTTP port, for the
// heartbeat tests (docs/bridge-events.md, "Recovery > Worker liveness"):
// while open it accepts every connection and closes it at once, so the
// bridge's worker check succeeds; closed, connections are refused. It can be
// reopened on the same port, like a worker that comes back.
//
// Thread safety: Open(), Close() and the destructor from one thread;
// accepted() from any.
#ifndef KVINDEXER_TESTS_SUPPORT_FAKE_WORKER_PORT_H_
#define KVINDEXER_TESTS_SUPPORT_FAKE_WORKER_PORT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>

namespace kvindexer::bridge::testing {

class FakeWorkerPort {
 public:
  // Opens on an ephemeral port of 127.0.0.1; port() is 0 if that failed.
  FakeWorkerPort();
  ~FakeWorkerPort();
  FakeWorkerPort(const FakeWorkerPort&) = delete;
  FakeWorkerPort& operator=(const FakeWorkerPort&) = delete;

  uint16_t port() const { return port_; }
  // "http://127.0.0.1:<port>": a worker address with this port.
  std::string url() const;
  bool is_open() const { return fd_ >= 0; }

  // Listens again on the same port; true on success (or if already open).
  bool Open();
  // Stops listening and accepting; later connects are refused.
  void Close();
  // Connections accepted so far, over every Open().
  size_t accepted() const { return accepted_.load(); }

 private:
  void AcceptLoop(int fd);

  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> accepted_{0};
  std::thread acceptor_;
};

}  // namespace kvindexer::bridge::testing

#endif  // KVINDEXER_TESTS_SUPPORT_FAKE_WORKER_PORT_H_
