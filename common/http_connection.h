// HttpConnection: one client connection of the metrics endpoint, accepted by
// BoundedHttpListener, with the bytes received on it that no request has
// consumed yet (a request arrives whole before it is answered, and a client
// may send the next one behind it).
//
// OWNERSHIP: move-only; the holder owns the socket. Destroying or closing it
// closes the socket and gives its place under the listener's connection cap
// back (`open_count`, shared with the listener so that a connection may
// outlive it).
//
// Thread safety: one thread at a time; handing a connection to another
// thread (through a queue with a mutex) is how it travels.
#ifndef KVINDEXER_COMMON_HTTP_CONNECTION_H_
#define KVINDEXER_COMMON_HTTP_CONNECTION_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

namespace kvindexer {

class HttpConnection {
 public:
  HttpConnection() = default;  // holds no socket
  // Takes `fd` and counts it in `open_count`, which it decrements again on
  // close. REQUIRES: `open_count` is not null.
  HttpConnection(int fd, std::shared_ptr<std::atomic<size_t>> open_count);
  ~HttpConnection();  // Close()
  HttpConnection(HttpConnection&& other) noexcept;
  HttpConnection& operator=(HttpConnection&& other) noexcept;
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  int fd() const { return fd_; }
  bool is_open() const { return fd_ >= 0; }

  // Received and not yet consumed: the start of the next request.
  std::string& received() { return received_; }
  const std::string& received() const { return received_; }

  // Requests answered on this connection so far.
  size_t requests_answered() const { return requests_answered_; }
  void CountAnswer() { ++requests_answered_; }

  // Closes the socket (idempotent).
  void Close();

 private:
  int fd_ = -1;
  std::shared_ptr<std::atomic<size_t>> open_count_;
  std::string received_;
  size_t requests_answered_ = 0;
};

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_HTTP_CONNECTION_H_
