// ConnectionListener and ConnectionTable (server/connection_listener.h,
// server/connection_table.h) on loopback sockets, without gRPC: the test
// plays gRPC's part and holds the sockets handed to it, closing one to end
// its connection. Waits are bounded polls on conditions; nothing sleeps.
#include "server/connection_listener.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/connection_table.h"
#include "tests/support/loopback_connection.h"

namespace kvindexer::connection_listener_test {
namespace {

using namespace std::chrono_literals;

using test_support::ClosedByPeer;
using test_support::ConnectToLoopback;

constexpr std::chrono::milliseconds kWait = 10s;

// Plays gRPC: keeps the sockets handed to it.
class Receiver {
 public:
  ConnectionListener::HandOff HandOff() {
    return [this](int, int fd) {
      std::lock_guard<std::mutex> lock(mu_);
      fds_.push_back(fd);
    };
  }
  size_t received() {
    std::lock_guard<std::mutex> lock(mu_);
    return fds_.size();
  }
  bool WaitForReceived(size_t n) {
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (received() < n) {
      if (std::chrono::steady_clock::now() > until) return false;
      pollfd none{.fd = -1, .events = 0, .revents = 0};
      poll(&none, 1, 1);
    }
    return true;
  }
  // Ends the connection handed over `i`-th, as gRPC does when its peer
  // leaves.
  void CloseReceived(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    close(fds_[i]);
    fds_[i] = -1;
  }
  ~Receiver() {
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }

 private:
  std::mutex mu_;
  std::vector<int> fds_;
};

TEST(ConnectionListenerTest, RefusesBeyondTheCapAndAcceptsOnceOneEnds) {
  auto listener = ConnectionListener::Bind("127.0.0.1:0", 2);
  ASSERT_TRUE(listener.ok()) << listener.status();
  ASSERT_GT((*listener)->port(), 0);
  Receiver receiver;
  (*listener)->Start(receiver.HandOff());
  const int port = (*listener)->port();

  const int first = ConnectToLoopback(port);
  const int second = ConnectToLoopback(port);
  ASSERT_GE(first, 0);
  ASSERT_GE(second, 0);
  ASSERT_TRUE(receiver.WaitForReceived(2));
  EXPECT_EQ((*listener)->open_connections(), 2u);

  // At the cap: accepted and closed at once, never handed over.
  const int third = ConnectToLoopback(port);
  ASSERT_GE(third, 0);
  EXPECT_TRUE(ClosedByPeer(third, kWait));
  close(third);
  EXPECT_EQ((*listener)->refused_total(), 1u);
  EXPECT_EQ(receiver.received(), 2u);

  // One connection ends: its place is free again.
  receiver.CloseReceived(0);
  EXPECT_EQ((*listener)->open_connections(), 1u);
  const int fourth = ConnectToLoopback(port);
  ASSERT_GE(fourth, 0);
  ASSERT_TRUE(receiver.WaitForReceived(3));
  EXPECT_EQ((*listener)->open_connections(), 2u);
  EXPECT_EQ((*listener)->refused_total(), 1u);

  (*listener)->Stop();
  // Stopped: nobody listens any more.
  EXPECT_LT(ConnectToLoopback(port), 0);
  for (int fd : {first, second, fourth}) close(fd);
}

TEST(ConnectionListenerTest, APortInUseFailsTheBind) {
  auto first = ConnectionListener::Bind("127.0.0.1:0", 1);
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string taken = "127.0.0.1:" + std::to_string((*first)->port());
  auto second = ConnectionListener::Bind(taken, 1);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
}

TEST(ConnectionListenerTest, BindsIPv6Loopback) {
  auto listener = ConnectionListener::Bind("[::1]:0", 1);
  if (!listener.ok()) GTEST_SKIP() << "no IPv6 here: " << listener.status();
  EXPECT_GT((*listener)->port(), 0);
}

TEST(ConnectionTableTest, AnEndedConnectionIsSweptEvenWhenItsNumberIsReused) {
  ConnectionTable table;
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  ASSERT_TRUE(table.Add(pair[0]));
  ASSERT_TRUE(table.Add(pair[1]));
  EXPECT_EQ(table.Sweep(), 2u);

  // pair[0] ends, and a new socket takes its number (the lowest free one).
  const int old_number = pair[0];
  close(pair[0]);
  const int reused = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(reused, 0);
  EXPECT_EQ(table.Sweep(), 1u);
  EXPECT_EQ(table.recorded(), 1u);
  if (reused == old_number) {
    // Same number, another socket: still not the recorded connection.
    EXPECT_EQ(table.Sweep(), 1u);
  }
  close(reused);
  close(pair[1]);
  EXPECT_EQ(table.Sweep(), 0u);
}

TEST(ConnectionTableTest, OnlySocketsAreRecorded) {
  ConnectionTable table;
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  EXPECT_FALSE(table.Add(pipe_fds[0]));
  EXPECT_FALSE(table.Add(-1));
  EXPECT_EQ(table.Sweep(), 0u);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}

}  // namespace
}  // namespace kvindexer::connection_listener_test
