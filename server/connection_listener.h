// ConnectionListener: the gRPC port's listening socket, with the cap on open
// connections (KV_INDEXER_GRPC_MAX_CONNECTIONS; docs/configuration.md,
// "Queues and connections").
//
// Why the server accepts connections itself: gRPC C++ 1.51 (Debian 12) has
// no setting for the number of connections a server holds (the channel
// argument grpc.max_allowed_incoming_connections came later), and its own
// listener stops accepting for good the first time accept(2) fails with
// anything but EINTR or EAGAIN: a process that runs out of file
// descriptors (EMFILE) would keep its open connections and never take a new
// one. So the server binds the port here, accepts on a thread of its own,
// and hands each connection to gRPC through the external connection
// acceptor of grpc::ServerBuilder (FROM_FD), which runs the same TLS and
// HTTP/2 handshakes as gRPC's own listener.
//
// At the cap a new connection is accepted and closed at once (the client
// sees it reset and retries with its backoff), counted and logged at WARN
// (1st, 2nd, 4th, ... refusal). When accept(2) fails for lack of
// descriptors or memory, accepting pauses for 100 ms and resumes; it never
// stops while the server runs. Connections end when gRPC closes them (the
// peer left, the handshake timed out, shutdown); ConnectionTable notices.
//
// Thread safety: Bind, Start and Stop from one owning thread; the
// accessors from any thread. The hand-off callback runs on the listener's
// thread.
#ifndef KVINDEXER_SERVER_CONNECTION_LISTENER_H_
#define KVINDEXER_SERVER_CONNECTION_LISTENER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "common/doubling_throttle.h"
#include "server/connection_table.h"

namespace kvindexer {

class ConnectionListener {
 public:
  // Takes an accepted, non-blocking, close-on-exec socket and owns it from
  // then on.
  using HandOff = std::function<void(int listen_fd, int fd)>;

  // Binds `listen_addr` (an IP literal and port, as ParseListenAddr accepts
  // it; port 0 picks a free port) without SO_REUSEPORT, so that a port in
  // use fails here, and listens. The wildcard [::] also takes IPv4, as
  // gRPC's listener does. UNAVAILABLE naming the address and the system's
  // reason when it cannot (common/listening_socket.h). REQUIRES:
  // max_connections > 0.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ConnectionListener>> Bind(
      const std::string& listen_addr, size_t max_connections);

  ~ConnectionListener();  // Stop()
  ConnectionListener(const ConnectionListener&) = delete;
  ConnectionListener& operator=(const ConnectionListener&) = delete;

  int port() const { return port_; }
  size_t max_connections() const { return max_connections_; }

  // Starts accepting on the listener's thread. REQUIRES: called once.
  void Start(HandOff hand_off);
  // Stops accepting, closes the listening socket and joins the thread.
  // Connections handed off stay with gRPC. Idempotent.
  void Stop();

  // Connections open now (a sweep of the table).
  size_t open_connections() const { return table_.Sweep(); }
  // Connections closed at once because the cap was reached.
  uint64_t refused_total() const { return refusals_.total(); }
  // Times accept(2) failed for lack of descriptors or memory.
  uint64_t accept_failures_total() const {
    return accept_failures_.load(std::memory_order_relaxed);
  }

 private:
  ConnectionListener(int listen_fd, int wake_fd, int port,
                     size_t max_connections);

  void Run();
  // Accepts what is pending; false when accepting must pause.
  bool AcceptPending();

  int listen_fd_;      // -1 once stopped
  const int wake_fd_;  // eventfd: Stop wakes the loop
  const int port_;
  const size_t max_connections_;
  mutable ConnectionTable table_;  // sweeping is no change seen outside
  DoublingThrottle refusals_;
  std::atomic<uint64_t> accept_failures_{0};
  HandOff hand_off_;
  std::thread thread_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_CONNECTION_LISTENER_H_
