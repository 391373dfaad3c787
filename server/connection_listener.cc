#include "server/connection_listener.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace kvindexer {
namespace {

// As gRPC's own listener: the kernel's maximum (net.core.somaxconn caps it).
constexpr int kListenBacklog = SOMAXCONN;
// When accept() fails for lack of descriptors or memory the listening
// socket stays readable: accepting pauses this long instead of spinning.
constexpr int kAcceptPauseMs = 100;

std::string ErrnoText(int error) { return std::strerror(error); }

}  // namespace

absl::StatusOr<std::unique_ptr<ConnectionListener>> ConnectionListener::Bind(
    const std::string& listen_addr, size_t max_connections) {
  std::string host;
  std::string port;
  if (!listen_addr.empty() && listen_addr.front() == '[') {
    const size_t bracket = listen_addr.find(']');
    if (bracket == std::string::npos || bracket + 1 >= listen_addr.size()) {
      return absl::InvalidArgumentError("not an IP literal and port");
    }
    host = listen_addr.substr(1, bracket - 1);
    port = listen_addr.substr(bracket + 2);
  } else {
    const size_t colon = listen_addr.rfind(':');
    if (colon == std::string::npos) {
      return absl::InvalidArgumentError("not an IP literal and port");
    }
    host = listen_addr.substr(0, colon);
    port = listen_addr.substr(colon + 1);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int resolved =
          getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
      resolved != 0) {
    return absl::UnavailableError(gai_strerror(resolved));
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
    // A restart binds again at once. Not SO_REUSEPORT: a port in use must
    // fail the bind instead of being shared.
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (a->ai_family == AF_INET6) {
      // The IPv6 wildcard takes IPv4 as well.
      const auto* v6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
      if (IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr)) {
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof(no));
      }
    }
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 ||
        listen(fd, kListenBacklog) != 0) {
      last_error = errno;
      close(fd);
      continue;
    }
    listen_fd = fd;
  }
  freeaddrinfo(found);
  if (listen_fd < 0) return absl::UnavailableError(ErrnoText(last_error));

  sockaddr_storage bound{};
  socklen_t bound_size = sizeof(bound);
  if (getsockname(listen_fd, reinterpret_cast<sockaddr*>(&bound),
                  &bound_size) != 0) {
    const int error = errno;
    close(listen_fd);
    return absl::UnavailableError(ErrnoText(error));
  }
  int bound_port = 0;
  if (bound.ss_family == AF_INET) {
    bound_port = ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
  } else if (bound.ss_family == AF_INET6) {
    bound_port =
        ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port);
  }
  const int wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) {
    const int error = errno;
    close(listen_fd);
    return absl::UnavailableError(ErrnoText(error));
  }
  return std::unique_ptr<ConnectionListener>(
      new ConnectionListener(listen_fd, wake_fd, bound_port, max_connections));
}

ConnectionListener::ConnectionListener(int listen_fd, int wake_fd, int port,
                                       size_t max_connections)
    : listen_fd_(listen_fd),
      wake_fd_(wake_fd),
      port_(port),
      max_connections_(max_connections) {}

ConnectionListener::~ConnectionListener() {
  Stop();
  close(wake_fd_);
}

void ConnectionListener::Start(HandOff hand_off) {
  hand_off_ = std::move(hand_off);
  thread_ = std::thread([this] { Run(); });
}

void ConnectionListener::Stop() {
  if (listen_fd_ < 0) return;
  const uint64_t one = 1;
  // Fails only when the counter would overflow, and the loop is awake then.
  (void)!write(wake_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  close(listen_fd_);
  listen_fd_ = -1;
}

void ConnectionListener::Run() {
  pollfd fds[2] = {{.fd = wake_fd_, .events = POLLIN, .revents = 0},
                   {.fd = listen_fd_, .events = POLLIN, .revents = 0}};
  bool paused = false;
  for (;;) {
    // While paused only the wake-up is watched, for at most the pause.
    const int ready = poll(fds, paused ? 1 : 2, paused ? kAcceptPauseMs : -1);
    if (ready < 0 && errno != EINTR) {
      spdlog::error("grpc listener: poll failed: {}", ErrnoText(errno));
      paused = true;
      continue;
    }
    if ((fds[0].revents & POLLIN) != 0) return;
    paused = !AcceptPending();
  }
}

bool ConnectionListener::AcceptPending() {
  for (;;) {
    const int fd =
        accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int error = errno;
      if (error == EAGAIN || error == EWOULDBLOCK) return true;
      if (error == EMFILE || error == ENFILE || error == ENOBUFS ||
          error == ENOMEM) {
        const uint64_t n =
            accept_failures_.fetch_add(1, std::memory_order_relaxed) + 1;
        if (IsPowerOfTwo(n)) {
          spdlog::warn(
              "grpc listener: cannot accept a connection: {}; accepting "
              "pauses for {} ms and resumes (failures so far: {})",
              ErrnoText(error), kAcceptPauseMs, n);
        }
        return false;
      }
      continue;  // the peer aborted, or a transient network error
    }
    if (table_.recorded() >= max_connections_ &&
        table_.Sweep() >= max_connections_) {
      // Counted before the close, which the peer may see at once.
      const uint64_t n = refusals_.Count();
      close(fd);
      if (n != 0) {
        spdlog::warn(
            "grpc listener: refused a connection: {} are open, the most "
            "allowed (KV_INDEXER_GRPC_MAX_CONNECTIONS={}); refusals so far: "
            "{}",
            max_connections_, max_connections_, n);
      }
      continue;
    }
    // gRPC sets this on the sockets it accepts itself.
    const int yes = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
    table_.Add(fd);
    hand_off_(listen_fd_, fd);
  }
}

}  // namespace kvindexer
