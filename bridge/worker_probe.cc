#include "bridge/worker_probe.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"

namespace kvindexer::bridge {
namespace {

using SteadyClock = std::chrono::steady_clock;

// How often a connect in progress looks at the cancel flag.
constexpr std::chrono::milliseconds kCancelSlice{50};

std::string ErrnoText(int err) { return std::system_category().message(err); }

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

struct AddrInfoDeleter {
  void operator()(addrinfo* info) const { freeaddrinfo(info); }
};

// One address: OK, CANCELLED, or UNAVAILABLE with the reason.
absl::Status ConnectOne(const addrinfo& ai, SteadyClock::time_point deadline,
                        const std::atomic<bool>* cancel) {
  const int fd =
      socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
             ai.ai_protocol);
  if (fd < 0) return absl::UnavailableError(ErrnoText(errno));
  FdCloser closer(fd);
  if (connect(fd, ai.ai_addr, ai.ai_addrlen) == 0) return absl::OkStatus();
  if (errno != EINPROGRESS) return absl::UnavailableError(ErrnoText(errno));
  while (true) {
    if (cancel != nullptr && cancel->load()) {
      return absl::CancelledError("cancelled");
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - SteadyClock::now());
    if (left.count() <= 0) return absl::UnavailableError("timed out");
    pollfd p{fd, POLLOUT, 0};
    const int ready =
        poll(&p, 1, static_cast<int>(std::min(left, kCancelSlice).count()) + 1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(ErrnoText(errno));
    }
    if (ready == 0) continue;
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err == 0) return absl::OkStatus();
    return absl::UnavailableError(ErrnoText(err));
  }
}

}  // namespace

std::string FormatHostPort(const WorkerHostPort& target) {
  if (target.host.find(':') != std::string::npos) {
    return absl::StrCat("[", target.host, "]:", target.port);
  }
  return absl::StrCat(target.host, ":", target.port);
}

absl::Status TcpConnectCheck(const WorkerHostPort& target,
                             std::chrono::milliseconds timeout,
                             const std::atomic<bool>* cancel) {
  const auto deadline = SteadyClock::now() + timeout;
  const std::string where = FormatHostPort(target);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(target.port);
  const int rc = getaddrinfo(target.host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot resolve ", where, ": ",
        rc == EAI_SYSTEM ? ErrnoText(errno) : std::string(gai_strerror(rc))));
  }
  std::unique_ptr<addrinfo, AddrInfoDeleter> owned(found);
  std::string reasons;
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    absl::Status status = ConnectOne(*ai, deadline, cancel);
    if (status.ok() || absl::IsCancelled(status)) return status;
    absl::StrAppend(&reasons, reasons.empty() ? "" : ", ", status.message());
    if (SteadyClock::now() >= deadline) break;
  }
  return absl::UnavailableError(
      absl::StrCat("TCP connect to ", where, " failed within ", timeout.count(),
                   " ms: ", reasons.empty() ? "no address" : reasons));
}

TcpWorkerProbe::TcpWorkerProbe(WorkerHostPort target,
                               std::chrono::milliseconds timeout)
    : target_(std::move(target)),
      timeout_(timeout),
      thread_([this] { ConnectLoop(); }) {}

TcpWorkerProbe::~TcpWorkerProbe() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void TcpWorkerProbe::StartCheck() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    requested_ = true;
    result_.reset();
  }
  wake_.notify_all();
}

std::optional<absl::Status> TcpWorkerProbe::TakeResult() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(result_, std::nullopt);
}

void TcpWorkerProbe::ConnectLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return requested_ || stop_.load(); });
    if (stop_) return;
    requested_ = false;
    lock.unlock();
    absl::Status status = TcpConnectCheck(target_, timeout_, &stop_);
    lock.lock();
    result_ = std::move(status);
  }
}

}  // namespace kvindexer::bridge
