#include "common/bounded_http_listener.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "common/http_refusal.h"
#include "common/http_request_head.h"
#include "common/listening_socket.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace kvindexer {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Completed handshakes the kernel queues before accept(). They hold no file
// descriptor of ours, and the loop accepts eagerly.
constexpr int kListenBacklog = 64;
// Accepts per wake-up, so that a flood of connections cannot starve the
// reads of the ones already open.
constexpr size_t kAcceptsPerWake = 64;
// When accept() fails for lack of descriptors or memory, the listening
// socket stays readable: accepting pauses this long instead of spinning.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
constexpr auto kAcceptWarningInterval = std::chrono::minutes(1);

std::string ErrnoText(int error) { return std::strerror(error); }

void WakeUp(int event_fd) {
  const uint64_t one = 1;
  // An eventfd write fails only when the counter would overflow, and then
  // the loop is awake anyway.
  (void)!write(event_fd, &one, sizeof(one));
}

}  // namespace

absl::StatusOr<std::unique_ptr<BoundedHttpListener>> BoundedHttpListener::Bind(
    const MetricsAddress& address, const MetricsHttpLimits& limits) {
  absl::StatusOr<ListeningSocket> listening =
      OpenListeningSocket(address.host, address.port,
                          ListeningSocketOptions{.backlog = kListenBacklog});
  if (!listening.ok()) return listening.status();
  const int wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) {
    const int error = errno;
    close(listening->fd);
    return absl::UnavailableError(fmt::format(
        "cannot listen on {}: {}", address.ToString(), ErrnoText(error)));
  }
  return std::unique_ptr<BoundedHttpListener>(
      new BoundedHttpListener(listening->fd, wake_fd, listening->port,
                              std::move(listening->host), limits));
}

BoundedHttpListener::BoundedHttpListener(int listen_fd, int wake_fd,
                                         uint16_t port, std::string bound_host,
                                         const MetricsHttpLimits& limits)
    : listen_fd_(listen_fd),
      wake_fd_(wake_fd),
      port_(port),
      bound_host_(std::move(bound_host)),
      limits_(limits),
      open_count_(std::make_shared<std::atomic<size_t>>(0)) {}

BoundedHttpListener::~BoundedHttpListener() {
  Stop();
  close(wake_fd_);
}

void BoundedHttpListener::Start(Dispatch dispatch) {
  dispatch_ = std::move(dispatch);
  thread_ = std::thread([this] { Run(); });
}

void BoundedHttpListener::Resume(HttpConnection connection) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;  // `connection` closes on return
    resumed_.push_back(std::move(connection));
  }
  WakeUp(wake_fd_);
}

void BoundedHttpListener::Stop() {
  std::vector<HttpConnection> resumed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    resumed.swap(resumed_);
  }
  WakeUp(wake_fd_);
  if (thread_.joinable()) thread_.join();
  waiting_.clear();
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    listen_fd_ = -1;
  }
}

void BoundedHttpListener::Run() {
  std::vector<pollfd> polled;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
    }
    const SteadyClock::time_point now = SteadyClock::now();
    CloseExpired(now);

    const bool accepting = now >= accept_paused_until_;
    SteadyClock::time_point wake_at =
        accepting ? SteadyClock::time_point::max() : accept_paused_until_;
    polled.clear();
    polled.push_back(pollfd{.fd = wake_fd_, .events = POLLIN, .revents = 0});
    // poll() ignores a negative descriptor.
    polled.push_back(pollfd{
        .fd = accepting ? listen_fd_ : -1, .events = POLLIN, .revents = 0});
    for (const auto& [fd, waiting] : waiting_) {
      polled.push_back(pollfd{.fd = fd, .events = POLLIN, .revents = 0});
      wake_at = std::min(
          wake_at, WaitDeadline(limits_, waiting.since, waiting.kept_alive,
                                !waiting.connection.received().empty()));
    }
    int timeout_ms = -1;
    if (wake_at != SteadyClock::time_point::max()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(
          wake_at - SteadyClock::now());
      timeout_ms =
          static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT_MAX));
    }
    if (poll(polled.data(), polled.size(), timeout_ms) < 0) {
      if (errno != EINTR && errno != ENOMEM) {
        spdlog::error("metrics http: poll failed: {}", ErrnoText(errno));
        return;
      }
      continue;
    }
    if (polled[0].revents != 0) {
      uint64_t count = 0;
      (void)!read(wake_fd_, &count, sizeof(count));
      TakeResumed(SteadyClock::now());
    }
    for (size_t i = 2; i < polled.size(); ++i) {
      if (polled[i].revents == 0) continue;
      auto it = waiting_.find(polled[i].fd);
      if (it != waiting_.end() && !ReadFrom(it->second)) waiting_.erase(it);
    }
    if (polled[1].revents != 0) AcceptAll(SteadyClock::now());
  }
}

bool BoundedHttpListener::ReadFrom(Waiting& waiting) {
  std::string& received = waiting.connection.received();
  const size_t old_size = received.size();
  if (old_size >= limits_.max_head_bytes) return Examine(waiting);
  const size_t room = limits_.max_head_bytes - old_size;
  received.resize(old_size + room);
  const ssize_t n =
      recv(waiting.connection.fd(), received.data() + old_size, room, 0);
  received.resize(old_size + static_cast<size_t>(std::max<ssize_t>(n, 0)));
  if (n > 0) return Examine(waiting);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    return true;
  }
  // The client closed or reset the connection before its request was whole.
  waiting.connection.Close();
  return false;
}

bool BoundedHttpListener::Examine(Waiting& waiting) {
  const RequestHeadScan scan = ScanRequestHead(
      waiting.connection.received(), limits_.max_head_bytes, waiting.scanned);
  switch (scan.state) {
    case RequestHeadScan::State::kIncomplete:
      waiting.scanned = waiting.connection.received().size();
      return true;
    case RequestHeadScan::State::kTooLarge:
      RefuseAndClose(waiting.connection, HttpRefusal::kHeadTooLarge);
      return false;
    case RequestHeadScan::State::kHasBody:
      RefuseAndClose(waiting.connection, HttpRefusal::kBodyNotAccepted);
      return false;
    case RequestHeadScan::State::kComplete:
      dispatch_(std::move(waiting.connection));
      return false;
  }
  return false;
}

void BoundedHttpListener::AcceptAll(SteadyClock::time_point now) {
  for (size_t i = 0; i < kAcceptsPerWake; ++i) {
    // At the cap, make room first by closing the connection that has waited
    // longest, so that the count never passes the cap. When every open
    // connection is being answered there is none to close: the new
    // connection is accepted only to be closed at once (left in the
    // backlog, it would keep the listening socket readable).
    bool refuse = false;
    if (open_count_->load() >= limits_.max_connections) {
      pollfd pending{.fd = listen_fd_, .events = POLLIN, .revents = 0};
      if (poll(&pending, 1, 0) != 1) return;  // none to make room for
      auto oldest = std::min_element(waiting_.begin(), waiting_.end(),
                                     [](const auto& a, const auto& b) {
                                       return a.second.since < b.second.since;
                                     });
      if (oldest != waiting_.end()) {
        waiting_.erase(oldest);
      } else {
        refuse = true;
      }
    }
    const int fd =
        accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int error = errno;
      if (error == EAGAIN || error == EWOULDBLOCK) return;
      if (error == EMFILE || error == ENFILE || error == ENOBUFS ||
          error == ENOMEM) {
        accept_paused_until_ = now + kAcceptPause;
        if (now >= next_accept_warning_) {
          next_accept_warning_ = now + kAcceptWarningInterval;
          spdlog::warn(
              "metrics http: cannot accept connections: {}; pausing for {} ms",
              ErrnoText(error), kAcceptPause.count());
        }
        return;
      }
      continue;  // the peer aborted, or a transient network error
    }
    if (refuse) {
      close(fd);
      continue;
    }
    waiting_.emplace(fd, Waiting{.connection = HttpConnection(fd, open_count_),
                                 .since = now,
                                 .kept_alive = false,
                                 .scanned = 0});
  }
}

void BoundedHttpListener::CloseExpired(SteadyClock::time_point now) {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    Waiting& waiting = it->second;
    const bool any_bytes = !waiting.connection.received().empty();
    if (now <
        WaitDeadline(limits_, waiting.since, waiting.kept_alive, any_bytes)) {
      ++it;
      continue;
    }
    if (any_bytes) {
      RefuseAndClose(waiting.connection, HttpRefusal::kRequestTimeout);
    }
    it = waiting_.erase(it);
  }
}

void BoundedHttpListener::TakeResumed(SteadyClock::time_point now) {
  std::vector<HttpConnection> resumed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    resumed.swap(resumed_);
  }
  for (HttpConnection& connection : resumed) {
    const int fd = connection.fd();
    Waiting waiting{.connection = std::move(connection),
                    .since = now,
                    .kept_alive = true,
                    .scanned = 0};
    // The client may have sent its next request behind the last one.
    if (Examine(waiting)) waiting_.emplace(fd, std::move(waiting));
  }
}

}  // namespace kvindexer
