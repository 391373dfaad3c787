#include "tests/support/raw_http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace kvindexer::test_support {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Milliseconds left until `deadline`, for poll(); 0 once it has passed.
int MillisLeft(SteadyClock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(
      deadline - SteadyClock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT_MAX));
}

// Parses all of `text` as a decimal number.
template <typename T>
bool ParseDecimal(std::string_view text, T& value) {
  const auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && error == std::errc() &&
         end == text.data() + text.size();
}

// The value of header `name` (case-insensitive) in `headers`, CRLF-separated
// lines; empty when absent.
std::string_view HeaderValue(std::string_view headers, std::string_view name) {
  while (!headers.empty()) {
    const size_t end = headers.find("\r\n");
    const std::string_view line = headers.substr(0, end);
    headers = end == std::string_view::npos ? std::string_view()
                                            : headers.substr(end + 2);
    const size_t colon = line.find(':');
    if (colon != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < colon && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(line[i])) ==
             std::tolower(static_cast<unsigned char>(name[i]));
    }
    if (!same) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
    return value;
  }
  return {};
}

}  // namespace

absl::StatusOr<RawHttpClient> RawHttpClient::Connect(
    int port, std::chrono::milliseconds timeout) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("socket: ", strerror(errno)));
  }
  RawHttpClient client(fd);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) !=
          0 &&
      errno != EINPROGRESS) {
    return absl::UnavailableError(
        absl::StrCat("connect to 127.0.0.1:", port, ": ", strerror(errno)));
  }
  pollfd polled{.fd = fd, .events = POLLOUT, .revents = 0};
  if (poll(&polled, 1, static_cast<int>(timeout.count())) != 1) {
    return absl::DeadlineExceededError(
        absl::StrCat("connect to 127.0.0.1:", port, " timed out"));
  }
  int error = 0;
  socklen_t size = sizeof(error);
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size);
  if (error != 0) {
    return absl::UnavailableError(
        absl::StrCat("connect to 127.0.0.1:", port, ": ", strerror(error)));
  }
  return client;
}

RawHttpClient::RawHttpClient(RawHttpClient&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), pending_(std::move(other.pending_)) {}

RawHttpClient& RawHttpClient::operator=(RawHttpClient&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    pending_ = std::move(other.pending_);
  }
  return *this;
}

RawHttpClient::~RawHttpClient() {
  if (fd_ >= 0) close(fd_);
}

absl::Status RawHttpClient::Send(std::string_view bytes,
                                 std::chrono::milliseconds timeout) {
  const SteadyClock::time_point deadline = SteadyClock::now() + timeout;
  while (!bytes.empty()) {
    const ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      return absl::UnavailableError(absl::StrCat("send: ", strerror(errno)));
    }
    pollfd polled{.fd = fd_, .events = POLLOUT, .revents = 0};
    if (poll(&polled, 1, MillisLeft(deadline)) == 0) {
      return absl::DeadlineExceededError("send: the socket stayed full");
    }
  }
  return absl::OkStatus();
}

int RawHttpClient::ReadSome(SteadyClock::time_point deadline) {
  for (;;) {
    char buffer[16384];
    const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
    if (n > 0) {
      pending_.append(buffer, static_cast<size_t>(n));
      return static_cast<int>(n);
    }
    if (n == 0) return 0;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return 0;  // reset
    pollfd polled{.fd = fd_, .events = POLLIN, .revents = 0};
    if (poll(&polled, 1, MillisLeft(deadline)) == 0) return -1;
  }
}

absl::StatusOr<RawHttpResponse> RawHttpClient::ReadResponse(
    std::chrono::milliseconds timeout) {
  const SteadyClock::time_point deadline = SteadyClock::now() + timeout;
  size_t head_end = pending_.find("\r\n\r\n");
  while (head_end == std::string::npos) {
    const int n = ReadSome(deadline);
    if (n == 0) {
      return absl::UnavailableError(
          absl::StrCat("closed before a response; received: ", pending_));
    }
    if (n < 0) {
      return absl::DeadlineExceededError(
          absl::StrCat("no response in time; received: ", pending_));
    }
    head_end = pending_.find("\r\n\r\n");
  }
  RawHttpResponse response;
  const size_t line_end = pending_.find("\r\n");
  const std::string_view status_line(pending_.data(), line_end);
  const size_t space = status_line.find(' ');
  if (!status_line.starts_with("HTTP/1.") || space == std::string_view::npos ||
      !ParseDecimal(status_line.substr(space + 1, 3), response.status)) {
    return absl::UnavailableError(
        absl::StrCat("not an HTTP response: ", pending_));
  }
  response.headers = pending_.substr(line_end + 2, head_end - line_end - 2);
  size_t body_size = 0;
  const std::string_view length =
      HeaderValue(response.headers, "Content-Length");
  if (!length.empty() && !ParseDecimal(length, body_size)) {
    return absl::UnavailableError(
        absl::StrCat("bad Content-Length: ", std::string(length)));
  }
  const size_t body_start = head_end + 4;
  while (pending_.size() < body_start + body_size) {
    const int n = ReadSome(deadline);
    if (n <= 0) {
      return absl::UnavailableError(
          absl::StrCat("the body ended early; received: ", pending_));
    }
  }
  response.body = pending_.substr(body_start, body_size);
  pending_.erase(0, body_start + body_size);
  return response;
}

bool RawHttpClient::WaitForClose(std::chrono::milliseconds timeout) {
  const SteadyClock::time_point deadline = SteadyClock::now() + timeout;
  for (;;) {
    const int n = ReadSome(deadline);
    if (n == 0) return true;
    if (n < 0) return false;
  }
}

}  // namespace kvindexer::test_support
