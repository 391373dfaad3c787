#include "common/http_exchange_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>

namespace kvindexer {
namespace {

void IpAndPort(const sockaddr_storage& address, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text));
    port = ntohs(v4->sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
    port = ntohs(v6->sin6_port);
  }
  ip = text;
}

}  // namespace

ExchangeStream::ExchangeStream(HttpConnection& connection)
    : connection_(connection) {}

bool ExchangeStream::is_readable() const {
  return consumed_ < connection_.received().size();
}

ssize_t ExchangeStream::read(char* ptr, size_t size) {
  const std::string& received = connection_.received();
  const size_t n = std::min(size, received.size() - consumed_);
  if (n == 0) {
    read_past_end_ = true;
    return 0;
  }
  std::memcpy(ptr, received.data() + consumed_, n);
  consumed_ += n;
  return static_cast<ssize_t>(n);
}

ssize_t ExchangeStream::write(const char* ptr, size_t size) {
  response_.append(ptr, size);
  return static_cast<ssize_t>(size);
}

void ExchangeStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage address{};
  socklen_t size = sizeof(address);
  port = -1;
  if (getpeername(connection_.fd(), reinterpret_cast<sockaddr*>(&address),
                  &size) == 0) {
    IpAndPort(address, ip, port);
  }
}

void ExchangeStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage address{};
  socklen_t size = sizeof(address);
  port = -1;
  if (getsockname(connection_.fd(), reinterpret_cast<sockaddr*>(&address),
                  &size) == 0) {
    IpAndPort(address, ip, port);
  }
}

bool ExchangeStream::Send(
    std::optional<std::chrono::steady_clock::time_point> deadline,
    int stop_fd) {
  size_t sent = 0;
  while (sent < response_.size()) {
    const ssize_t n =
        send(connection_.fd(), response_.data() + sent, response_.size() - sent,
             MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return false;
    if (!deadline.has_value()) return false;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(
        *deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd polled[2] = {
        {.fd = connection_.fd(), .events = POLLOUT, .revents = 0},
        {.fd = stop_fd, .events = POLLIN, .revents = 0}};
    const int ready = poll(
        polled, 2, static_cast<int>(std::min<int64_t>(left.count(), INT_MAX)));
    if (ready < 0 && errno != EINTR) return false;
    if (polled[1].revents != 0) return false;
  }
  return true;
}

void ExchangeStream::DropConsumed() {
  connection_.received().erase(0, consumed_);
  consumed_ = 0;
}

}  // namespace kvindexer
