// HttpGet: one blocking HTTP/1.0 GET over loopback IPv4, for the tests
// that scrape /metrics and probe /healthz and /readyz of a real binary. Just
// enough HTTP for our own endpoint: no redirects, no chunked bodies.
#ifndef KVINDEXER_TESTS_SUPPORT_HTTP_GET_H_
#define KVINDEXER_TESTS_SUPPORT_HTTP_GET_H_

#include <chrono>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kvindexer::test_support {

struct HttpResponse {
  int status = 0;
  std::string headers;  // the header lines, status line excluded
  std::string body;
};

// GET `path` from 127.0.0.1:`port`; every socket wait is bounded by
// `timeout`. UNAVAILABLE when the connection or the read fails.
[[nodiscard]] absl::StatusOr<HttpResponse> HttpGet(
    int port, std::string_view path,
    std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_HTTP_GET_H_
