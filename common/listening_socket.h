// OpenListeningSocket: a TCP socket bound to host:port and listening, for the
// listeners that accept connections themselves (the metrics endpoint's
// BoundedHttpListener and the gRPC port's ConnectionListener).
//
// Every socket it opens is non-blocking and close-on-exec, and has
// SO_REUSEADDR (a restart binds again at once) but never SO_REUSEPORT (a
// port in use must fail the bind instead of being shared with another
// process).
//
// Thread safety: a free function with no shared state.
#ifndef KVINDEXER_COMMON_LISTENING_SOCKET_H_
#define KVINDEXER_COMMON_LISTENING_SOCKET_H_

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kvindexer {

struct ListeningSocketOptions {
  // Connections the kernel queues, complete, before accept(); by default
  // the kernel's maximum (net.core.somaxconn caps it).
  int backlog = SOMAXCONN;
  // The host must be a numeric literal: no name is looked up.
  bool numeric_host = false;
  // On the IPv6 wildcard "::", clear IPV6_V6ONLY so that the socket takes
  // IPv4 as well; otherwise the system default (net.ipv6.bindv6only) holds.
  bool ipv6_wildcard_takes_ipv4 = false;
};

// OWNERSHIP: the caller owns `fd` and closes it.
struct ListeningSocket {
  int fd = -1;
  uint16_t port = 0;  // the bound port: the kernel's pick when asked for 0
  std::string host;   // the bound address as a numeric literal ("::1")
};

// Resolves `host` (no brackets around an IPv6 literal) and binds the first
// address that binds. Port 0 lets the kernel pick a free port. Errors are
// UNAVAILABLE, "cannot listen on <host>:<port>: <the system's reason>".
[[nodiscard]] absl::StatusOr<ListeningSocket> OpenListeningSocket(
    std::string_view host, uint16_t port,
    const ListeningSocketOptions& options);

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_LISTENING_SOCKET_H_
