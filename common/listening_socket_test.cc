#include "common/listening_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/loopback_connection.h"

namespace kvindexer {
namespace listening_socket_test {

using ::testing::HasSubstr;

TEST(OpenListeningSocketTest, BindsAFreePortOnLoopbackAndReportsIt) {
  absl::StatusOr<ListeningSocket> listening =
      OpenListeningSocket("127.0.0.1", 0, ListeningSocketOptions{});
  ASSERT_TRUE(listening.ok()) << listening.status();
  EXPECT_GT(listening->port, 0);
  EXPECT_EQ(listening->host, "127.0.0.1");

  sockaddr_in bound{};
  socklen_t size = sizeof(bound);
  ASSERT_EQ(
      getsockname(listening->fd, reinterpret_cast<sockaddr*>(&bound), &size),
      0);
  EXPECT_EQ(ntohs(bound.sin_port), listening->port);
  EXPECT_NE(fcntl(listening->fd, F_GETFL) & O_NONBLOCK, 0);
  EXPECT_NE(fcntl(listening->fd, F_GETFD) & FD_CLOEXEC, 0);

  // It listens: a connection to the reported port is queued.
  const int client = test_support::ConnectToLoopback(listening->port);
  EXPECT_GE(client, 0);
  if (client >= 0) close(client);
  close(listening->fd);
}

TEST(OpenListeningSocketTest, APortInUseFailsNamingTheAddress) {
  absl::StatusOr<ListeningSocket> first =
      OpenListeningSocket("127.0.0.1", 0, ListeningSocketOptions{});
  ASSERT_TRUE(first.ok()) << first.status();

  absl::StatusOr<ListeningSocket> second =
      OpenListeningSocket("127.0.0.1", first->port, ListeningSocketOptions{});
  EXPECT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(),
              HasSubstr("cannot listen on 127.0.0.1:" +
                        std::to_string(first->port) + ": "));
  close(first->fd);
}

TEST(OpenListeningSocketTest, AnIpv6AddressIsNamedInBrackets) {
  absl::StatusOr<ListeningSocket> first =
      OpenListeningSocket("::1", 0, ListeningSocketOptions{});
  if (!first.ok()) GTEST_SKIP() << "no IPv6 here: " << first.status();
  EXPECT_EQ(first->host, "::1");

  absl::StatusOr<ListeningSocket> second =
      OpenListeningSocket("::1", first->port, ListeningSocketOptions{});
  EXPECT_FALSE(second.ok());
  EXPECT_THAT(second.status().message(),
              HasSubstr("cannot listen on [::1]:" +
                        std::to_string(first->port) + ": "));
  close(first->fd);
}

TEST(OpenListeningSocketTest, AHostThatIsNotALiteralFailsClearly) {
  absl::StatusOr<ListeningSocket> listening = OpenListeningSocket(
      "not-an-address", 0, ListeningSocketOptions{.numeric_host = true});
  ASSERT_FALSE(listening.ok());
  EXPECT_EQ(listening.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(listening.status().message(),
              HasSubstr("cannot listen on not-an-address:0: "));
}

}  // namespace listening_socket_test
}  // namespace kvindexer
