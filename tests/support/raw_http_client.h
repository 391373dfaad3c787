// RawHttpClient: a raw HTTP/1.1 client on loopback IPv4 for the tests of
// the metrics endpoint (common/ and tests/e2e/). It sends exactly the bytes
// it is given (partial heads, endless request lines, pipelined requests),
// reads responses one at a time, and tells when the server has closed the
// connection. Every wait is bounded by its timeout. Test-only.
//
// Thread safety: one thread at a time.
#ifndef KVINDEXER_TESTS_SUPPORT_RAW_HTTP_CLIENT_H_
#define KVINDEXER_TESTS_SUPPORT_RAW_HTTP_CLIENT_H_

#include <chrono>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kvindexer::test_support {

struct RawHttpResponse {
  int status = 0;
  std::string headers;  // the header lines, status line excluded
  std::string body;     // Content-Length bytes (none without the header)
};

class RawHttpClient {
 public:
  // Connects to 127.0.0.1:`port`.
  [[nodiscard]] static absl::StatusOr<RawHttpClient> Connect(
      int port, std::chrono::milliseconds timeout);

  RawHttpClient(RawHttpClient&& other) noexcept;
  RawHttpClient& operator=(RawHttpClient&& other) noexcept;
  RawHttpClient(const RawHttpClient&) = delete;
  RawHttpClient& operator=(const RawHttpClient&) = delete;
  ~RawHttpClient();

  // Sends all of `bytes`. UNAVAILABLE when the server closed or reset the
  // connection, DEADLINE_EXCEEDED when the socket did not take them in time.
  [[nodiscard]] absl::Status Send(std::string_view bytes,
                                  std::chrono::milliseconds timeout);

  // Reads the next response: its head, then Content-Length bytes of body.
  [[nodiscard]] absl::StatusOr<RawHttpResponse> ReadResponse(
      std::chrono::milliseconds timeout);

  // Waits until the server has closed or reset the connection, keeping what
  // it sent before (see pending()). False on timeout.
  bool WaitForClose(std::chrono::milliseconds timeout);

  // Received and not yet returned by ReadResponse.
  const std::string& pending() const { return pending_; }

 private:
  explicit RawHttpClient(int fd) : fd_(fd) {}
  // Reads what is there, waiting until `deadline`. >0: bytes added to
  // pending_; 0: end of stream (or reset); <0: timeout.
  int ReadSome(std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
  std::string pending_;
};

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_RAW_HTTP_CLIENT_H_
