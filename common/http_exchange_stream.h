// ExchangeStream: the httplib::Stream through which cpp-httplib parses one
// request of an HttpConnection and writes its response, so that cpp-httplib
// keeps doing what it did (routing, status lines, headers, compression)
// without ever waiting on a client.
//
// Reads come only from the bytes the listener has already received: a
// request reaches cpp-httplib whole (common/bounded_http_listener.h), so
// answering never waits for a client to send. Writes are collected and
// sent by Send, in one piece, after the handler has run.
//
// Thread safety: one thread. REQUIRES: `connection` outlives the stream.
// Includes cpp-httplib: only common/metrics_http_server.cc includes this.
#ifndef KVINDEXER_COMMON_HTTP_EXCHANGE_STREAM_H_
#define KVINDEXER_COMMON_HTTP_EXCHANGE_STREAM_H_

#include <httplib.h>

#include <chrono>
#include <optional>
#include <string>

#include "common/http_connection.h"

namespace kvindexer {

class ExchangeStream final : public httplib::Stream {
 public:
  explicit ExchangeStream(HttpConnection& connection);

  bool is_readable() const override;
  bool is_writable() const override { return true; }
  // 0 (end of stream) once the received bytes are used up.
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return connection_.fd(); }

  // True when cpp-httplib asked for more than the connection had received
  // (a head it could not parse to its end): what follows on the connection
  // cannot be trusted to start a request.
  bool read_past_end() const { return read_past_end_; }

  // Sends what cpp-httplib wrote. With `deadline`, waits for the socket up
  // to it; without, does not wait at all. Gives up early once `stop_fd`
  // is readable. True when everything was sent.
  [[nodiscard]] bool Send(
      std::optional<std::chrono::steady_clock::time_point> deadline,
      int stop_fd);

  // Drops the consumed bytes from the connection's received(): what stays
  // is the start of its next request.
  void DropConsumed();

 private:
  HttpConnection& connection_;
  size_t consumed_ = 0;
  bool read_past_end_ = false;
  std::string response_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_HTTP_EXCHANGE_STREAM_H_
