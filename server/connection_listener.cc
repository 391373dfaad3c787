#include "server/connection_listener.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "common/listening_socket.h"
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

// Digits only, 0..65535.
bool ParsePort(std::string_view text, uint16_t& port) {
  if (text.empty() || text.size() > 5) return false;
  uint32_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (value > 65535) return false;
  port = static_cast<uint16_t>(value);
  return true;
}

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
  uint16_t port_number = 0;
  if (!ParsePort(port, port_number)) {
    return absl::InvalidArgumentError("not an IP literal and port");
  }
  absl::StatusOr<ListeningSocket> listening = OpenListeningSocket(
      host, port_number,
      ListeningSocketOptions{.backlog = kListenBacklog,
                             .numeric_host = true,
                             .ipv6_wildcard_takes_ipv4 = true});
  if (!listening.ok()) return listening.status();
  const int wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) {
    const int error = errno;
    close(listening->fd);
    return absl::UnavailableError(ErrnoText(error));
  }
  return std::unique_ptr<ConnectionListener>(new ConnectionListener(
      listening->fd, wake_fd, listening->port, max_connections));
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
