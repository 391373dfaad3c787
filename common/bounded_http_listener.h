// BoundedHttpListener: the front of the metrics endpoint. It accepts TCP
// connections on one address and reads each request head itself, within
// MetricsHttpLimits: at most `max_connections` open at once, at most
// `max_head_bytes` per head, each request whole within `request_timeout`,
// idle kept-alive connections closed after `keep_alive_timeout`. Only a
// request that has arrived whole leaves it, through the dispatch callback.
//
// Why a front of our own: cpp-httplib 0.11 (Debian's shared library) reads a
// request line with no length limit, bounds a request only per read (a
// sender that trickles bytes is never timed out), gives each connection a
// pool thread while it waits for bytes, and has no connection cap. Its
// compile-time limits live in the .so and cannot be changed. So the bytes a
// client sends are read here, by one thread that never blocks (every socket
// is non-blocking and one poll loop watches them all), and cpp-httplib only
// parses and answers requests that are already complete
// (common/http_exchange_stream.h).
//
// At the cap, a new connection takes the place of the one that has waited
// longest for its request (idle or trickling), so that a crowd of idle or
// slow connections cannot lock out a probe that sends its request at once.
//
// Thread safety: Bind, Start and Stop from one owning thread; Resume and
// open_connections from any thread. The dispatch callback runs on the
// listener's thread and must not block.
#ifndef KVINDEXER_COMMON_BOUNDED_HTTP_LISTENER_H_
#define KVINDEXER_COMMON_BOUNDED_HTTP_LISTENER_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "common/http_connection.h"
#include "common/metrics_address.h"
#include "common/metrics_http_limits.h"

namespace kvindexer {

class BoundedHttpListener {
 public:
  // Takes a connection whose received() starts with a complete request head
  // that declares no body (more bytes may follow it).
  using Dispatch = std::function<void(HttpConnection)>;

  // Binds `address` (port 0: a free port the kernel picks) and listens. An
  // address that cannot be resolved or bound is UNAVAILABLE, "cannot listen
  // on <address>: <reason>".
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<BoundedHttpListener>>
  Bind(const MetricsAddress& address, const MetricsHttpLimits& limits);

  ~BoundedHttpListener();  // Stop()
  BoundedHttpListener(const BoundedHttpListener&) = delete;
  BoundedHttpListener& operator=(const BoundedHttpListener&) = delete;

  uint16_t port() const { return port_; }
  // The bound address as a numeric literal ("127.0.0.1", "::").
  const std::string& bound_host() const { return bound_host_; }

  // Starts the listener's thread. REQUIRES: called once.
  void Start(Dispatch dispatch);

  // Takes back a connection after its response, to wait for its next
  // request (which may already be in received()). After Stop it closes it.
  void Resume(HttpConnection connection);

  // Stops accepting, closes every connection it holds and joins its thread.
  // Connections dispatched earlier stay with their holders. Idempotent.
  void Stop();

  // Connections open now: those waiting here and those dispatched and not
  // yet closed.
  size_t open_connections() const { return open_count_->load(); }

 private:
  // A connection waiting for (the rest of) its next request.
  struct Waiting {
    HttpConnection connection;
    std::chrono::steady_clock::time_point since;
    bool kept_alive = false;
    size_t scanned = 0;  // bytes of received() already searched
  };

  BoundedHttpListener(int listen_fd, int wake_fd, uint16_t port,
                      std::string bound_host, const MetricsHttpLimits& limits);

  void Run();
  // Reads what `waiting` has to offer; false when it left the table (it was
  // dispatched, refused or closed).
  bool ReadFrom(Waiting& waiting);
  // Dispatches, refuses or keeps waiting, by what received() holds; false
  // when it left the table.
  bool Examine(Waiting& waiting);
  void AcceptAll(std::chrono::steady_clock::time_point now);
  void CloseExpired(std::chrono::steady_clock::time_point now);
  void TakeResumed(std::chrono::steady_clock::time_point now);

  int listen_fd_;      // -1 once stopped
  const int wake_fd_;  // eventfd: Resume and Stop wake the poll loop
  const uint16_t port_;
  const std::string bound_host_;
  const MetricsHttpLimits limits_;
  std::shared_ptr<std::atomic<size_t>> open_count_;

  Dispatch dispatch_;
  std::thread thread_;
  // Listener thread only: the connections waiting for a request, by fd.
  std::map<int, Waiting> waiting_;
  std::chrono::steady_clock::time_point accept_paused_until_;
  std::chrono::steady_clock::time_point next_accept_warning_;

  std::mutex mutex_;  // guards the members below
  bool stopping_ = false;
  std::vector<HttpConnection> resumed_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_BOUNDED_HTTP_LISTENER_H_
