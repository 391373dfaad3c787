#include "tests/support/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kvindexer::test_support {

absl::StatusOr<HttpResponse> HttpGet(int port, std::string_view path,
                                     std::chrono::milliseconds timeout) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError("socket() failed");
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  timeval tv{};
  tv.tv_sec = timeout.count() / 1000;
  tv.tv_usec = (timeout.count() % 1000) * 1000;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return absl::UnavailableError(
        absl::StrCat("connect to 127.0.0.1:", port, ": ", strerror(errno)));
  }
  const std::string request =
      "GET " + std::string(path) +
      " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n =
        send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return absl::UnavailableError("send failed");
    sent += static_cast<size_t>(n);
  }
  std::string raw;
  char buffer[16384];
  for (;;) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n == 0) break;
    if (n < 0) {
      return absl::UnavailableError(
          absl::StrCat("recv from 127.0.0.1:", port, ": ", strerror(errno)));
    }
    raw.append(buffer, static_cast<size_t>(n));
  }
  const size_t head_end = raw.find("\r\n\r\n");
  const size_t line_end = raw.find("\r\n");
  if (head_end == std::string::npos || !raw.starts_with("HTTP/1.")) {
    return absl::UnavailableError(absl::StrCat("not an HTTP answer: ", raw));
  }
  HttpResponse response;
  const size_t space = raw.find(' ');
  if (space == std::string::npos ||
      !absl::SimpleAtoi(raw.substr(space + 1, 3), &response.status)) {
    return absl::UnavailableError(absl::StrCat("bad status line: ", raw));
  }
  response.headers = raw.substr(line_end + 2, head_end - line_end - 2);
  response.body = raw.substr(head_end + 4);
  return response;
}

}  // namespace kvindexer::test_support
