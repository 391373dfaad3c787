// The worker probe of the heartbeats on loopback (docs/bridge-events.md,
// "Recovery > Worker liveness"): a listening port succeeds, a closed port
// fails promptly with the reason, and TcpWorkerProbe runs the connect off
// the caller's thread.
#include "bridge/worker_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

// A socket bound to an ephemeral loopback port; listening unless told not
// to (then the port refuses connections while the socket holds it).
class LoopbackPort {
 public:
  explicit LoopbackPort(int family, bool listening = true) {
    fd_ = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    sockaddr_storage storage{};
    socklen_t len = 0;
    if (family == AF_INET) {
      auto* addr = reinterpret_cast<sockaddr_in*>(&storage);
      addr->sin_family = AF_INET;
      addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      len = sizeof(sockaddr_in);
    } else {
      auto* addr = reinterpret_cast<sockaddr_in6*>(&storage);
      addr->sin6_family = AF_INET6;
      addr->sin6_addr = in6addr_loopback;
      len = sizeof(sockaddr_in6);
    }
    auto* sa = reinterpret_cast<sockaddr*>(&storage);
    if (bind(fd_, sa, len) != 0) return;
    if (listening && listen(fd_, 16) != 0) return;
    if (getsockname(fd_, sa, &len) != 0) return;
    port_ = ntohs(family == AF_INET
                      ? reinterpret_cast<sockaddr_in*>(&storage)->sin_port
                      : reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port);
  }
  ~LoopbackPort() {
    if (fd_ >= 0) close(fd_);
  }
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

// Waits for the probe's outcome, polling up to `bound`.
std::optional<absl::Status> AwaitResult(TcpWorkerProbe& probe,
                                        std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (std::chrono::steady_clock::now() < deadline) {
    if (std::optional<absl::Status> result = probe.TakeResult()) return result;
    std::this_thread::sleep_for(1ms);
  }
  return std::nullopt;
}

TEST(TcpConnectCheck, ListeningPortSucceeds) {
  LoopbackPort listener(AF_INET);
  ASSERT_GT(listener.port(), 0);
  EXPECT_TRUE(TcpConnectCheck({"127.0.0.1", listener.port()}, 2s).ok());
  EXPECT_TRUE(TcpConnectCheck({"localhost", listener.port()}, 2s).ok());
}

TEST(TcpConnectCheck, ListeningIpv6PortSucceeds) {
  LoopbackPort listener(AF_INET6);
  if (listener.port() == 0) GTEST_SKIP() << "no IPv6 loopback here";
  EXPECT_TRUE(TcpConnectCheck({"::1", listener.port()}, 2s).ok());
}

// A port nothing listens on is refused at once: the check fails with the
// reason long before its (here generous) timeout.
TEST(TcpConnectCheck, ClosedPortFailsWithTheReason) {
  LoopbackPort bound(AF_INET, /*listening=*/false);
  ASSERT_GT(bound.port(), 0);
  for (const uint16_t port : {bound.port(), uint16_t{1}}) {
    absl::Status status = TcpConnectCheck({"127.0.0.1", port}, 30s);
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << port;
    EXPECT_THAT(std::string(status.message()), HasSubstr("refused")) << port;
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("127.0.0.1:" + std::to_string(port)));
  }
}

TEST(TcpConnectCheck, UnresolvableHostFails) {
  absl::Status status = TcpConnectCheck({"no-such-host.invalid", 80}, 2s);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(status.message()), HasSubstr("no-such-host.invalid"));
}

// A listener with a backlog of 0 and one connection waiting in it: the
// kernel drops further SYNs, so a connect to it stays in progress.
class FullListener {
 public:
  FullListener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    filler_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    auto* sa = reinterpret_cast<sockaddr*>(&addr);
    if (fd_ < 0 || filler_ < 0 || bind(fd_, sa, len) != 0 ||
        listen(fd_, 0) != 0 || getsockname(fd_, sa, &len) != 0 ||
        connect(filler_, sa, len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
  }
  ~FullListener() {
    if (filler_ >= 0) close(filler_);
    if (fd_ >= 0) close(fd_);
  }
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  int filler_ = -1;
  uint16_t port_ = 0;
};

// A connect that never completes ends at the timeout, saying so.
TEST(TcpConnectCheck, HangingConnectTimesOut) {
  FullListener full;
  ASSERT_GT(full.port(), 0);
  absl::Status status = TcpConnectCheck({"127.0.0.1", full.port()}, 300ms);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(status.message()), HasSubstr("timed out"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("within 300 ms"));
}

// The cancel flag ends a connect in progress (not the 60 s timeout).
TEST(TcpConnectCheck, CancelEndsAHangingConnect) {
  FullListener full;
  ASSERT_GT(full.port(), 0);
  std::atomic<bool> cancel{false};
  absl::Status status;
  std::thread checker([&] {
    status = TcpConnectCheck({"127.0.0.1", full.port()}, 60s, &cancel);
  });
  cancel = true;
  checker.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
}

TEST(FormatHostPort, BracketsIpv6) {
  EXPECT_EQ(FormatHostPort({"10.0.0.5", 30000}), "10.0.0.5:30000");
  EXPECT_EQ(FormatHostPort({"fd00::5", 30000}), "[fd00::5]:30000");
  EXPECT_EQ(FormatHostPort({"worker-0", 1}), "worker-0:1");
}

// The asynchronous probe: StartCheck() returns at once and the outcome is
// collected later; checks can be repeated and follow the port's state.
TEST(TcpWorkerProbe, ReportsEachCheck) {
  std::optional<LoopbackPort> listener(std::in_place, AF_INET);
  const uint16_t port = listener->port();
  ASSERT_GT(port, 0);
  TcpWorkerProbe probe({"127.0.0.1", port});
  EXPECT_EQ(probe.TakeResult(), std::nullopt);  // nothing started
  probe.StartCheck();
  std::optional<absl::Status> first = AwaitResult(probe, 10s);
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(first->ok()) << *first;
  EXPECT_EQ(probe.TakeResult(), std::nullopt);  // taken once

  listener.reset();  // the worker goes away
  probe.StartCheck();
  std::optional<absl::Status> second = AwaitResult(probe, 10s);
  ASSERT_TRUE(second.has_value());
  EXPECT_FALSE(second->ok());
}

// R66 (c): the worker address of the spec's case, 127.0.0.1:1, refuses.
TEST(TcpWorkerProbe, R66cPortOneRefuses) {
  TcpWorkerProbe probe({"127.0.0.1", 1});
  probe.StartCheck();
  std::optional<absl::Status> result = AwaitResult(probe, 10s);
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->code(), absl::StatusCode::kUnavailable);
}

// Destroying a probe whose check hangs cancels the connect and returns
// (the 60 s timeout would otherwise hold the destructor).
TEST(TcpWorkerProbe, DestroyedWhileChecking) {
  FullListener full;
  ASSERT_GT(full.port(), 0);
  auto probe = std::make_unique<TcpWorkerProbe>(
      WorkerHostPort{"127.0.0.1", full.port()}, 60s);
  probe->StartCheck();
  EXPECT_EQ(probe->TakeResult(), std::nullopt);
  probe.reset();
}

}  // namespace
}  // namespace kvindexer::bridge
