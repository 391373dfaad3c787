#include "common/listening_socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "fmt/format.h"

namespace kvindexer {
namespace {

absl::Status CannotListen(std::string_view host, uint16_t port,
                          std::string_view reason) {
  if (host.find(':') != std::string_view::npos) {
    return absl::UnavailableError(
        fmt::format("cannot listen on [{}]:{}: {}", host, port, reason));
  }
  return absl::UnavailableError(
      fmt::format("cannot listen on {}:{}: {}", host, port, reason));
}

std::string NumericHost(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text));
  } else if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
  }
  return text;
}

uint16_t BoundPort(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
  }
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
  }
  return 0;
}

bool IsIpv6Wildcard(const addrinfo& a) {
  if (a.ai_family != AF_INET6) return false;
  const auto* v6 = reinterpret_cast<const sockaddr_in6*>(a.ai_addr);
  return IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr);
}

}  // namespace

absl::StatusOr<ListeningSocket> OpenListeningSocket(
    std::string_view host, uint16_t port,
    const ListeningSocketOptions& options) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  if (options.numeric_host) hints.ai_flags |= AI_NUMERICHOST;
  const std::string host_text(host);
  const std::string port_text = std::to_string(port);
  addrinfo* found = nullptr;
  if (const int resolved =
          getaddrinfo(host_text.c_str(), port_text.c_str(), &hints, &found);
      resolved != 0) {
    return CannotListen(host, port, gai_strerror(resolved));
  }
  int listen_fd = -1;
  int last_error = 0;
  for (const addrinfo* a = found; a != nullptr && listen_fd < 0;
       a = a->ai_next) {
    const int fd =
        socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
               a->ai_protocol);
    if (fd < 0) {
      last_error = errno;
      continue;
    }
    const int yes = 1;
    const int no = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (options.ipv6_wildcard_takes_ipv4 && IsIpv6Wildcard(*a)) {
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof(no));
    }
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 ||
        listen(fd, options.backlog) != 0) {
      last_error = errno;
      close(fd);
      continue;
    }
    listen_fd = fd;
  }
  freeaddrinfo(found);
  if (listen_fd < 0) {
    return CannotListen(host, port, std::strerror(last_error));
  }

  sockaddr_storage bound{};
  socklen_t bound_size = sizeof(bound);
  if (getsockname(listen_fd, reinterpret_cast<sockaddr*>(&bound),
                  &bound_size) != 0) {
    const int error = errno;
    close(listen_fd);
    return CannotListen(host, port, std::strerror(error));
  }
  return ListeningSocket{
      .fd = listen_fd, .port = BoundPort(bound), .host = NumericHost(bound)};
}

}  // namespace kvindexer
