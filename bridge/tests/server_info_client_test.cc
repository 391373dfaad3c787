// FetchKvEventsDescriptor against FakeServerInfo on loopback: what is
// transient (UNAVAILABLE: try again) and what parks (FailedPrecondition).
#include "bridge/server_info_client.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fake_server_info.h"

namespace kvindexer::bridge {
namespace server_info_client_test {

using ::kvindexer::test_support::AdvertisedKvEvents;
using ::kvindexer::test_support::FakeServerInfo;
using ::kvindexer::test_support::ServerInfoBody;
using ::testing::HasSubstr;

std::unique_ptr<FakeServerInfo> StartFake() {
  auto fake = FakeServerInfo::Start();
  EXPECT_TRUE(fake.ok()) << fake.status();
  return fake.ok() ? *std::move(fake) : nullptr;
}

WorkerUrl UrlOf(const std::string& address) {
  absl::StatusOr<WorkerUrl> url = ParseWorkerUrl(address);
  EXPECT_TRUE(url.ok()) << url.status();
  return url.ok() ? *url : WorkerUrl{};
}

TEST(ServerInfoClient, ReadsTheAdvertisedDescriptor) {
  std::unique_ptr<FakeServerInfo> fake = StartFake();
  ASSERT_NE(fake, nullptr);
  AdvertisedKvEvents advertised;
  advertised.endpoint_host = "0.0.0.0";
  advertised.endpoint_port_base = 6100;
  advertised.topic = "kv";
  advertised.block_size = 64;
  advertised.dp_size = 8;
  fake->Advertise(advertised);
  absl::StatusOr<KvEventsDescriptor> d =
      FetchKvEventsDescriptor(UrlOf(fake->url() + "/base/"));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(fake->last_path(), "/base/server_info");
  EXPECT_EQ(d->publisher, "zmq");
  EXPECT_EQ(d->endpoint_host, "0.0.0.0");
  EXPECT_EQ(d->endpoint_port_base, 6100u);
  EXPECT_EQ(d->topic, "kv");
  EXPECT_EQ(d->block_size, 64u);
  EXPECT_EQ(d->dp_size, 8u);
}

TEST(ServerInfoClient, NullKvEventsIsARefusal) {
  std::unique_ptr<FakeServerInfo> fake = StartFake();
  ASSERT_NE(fake, nullptr);
  fake->Answer(200, ServerInfoBody(nullptr));
  absl::StatusOr<KvEventsDescriptor> d =
      FetchKvEventsDescriptor(UrlOf(fake->url()));
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(d.status().message()),
              HasSubstr("kv_events is null or missing"));
}

TEST(ServerInfoClient, ServerErrorsAreTransientOtherStatusesRefuse) {
  std::unique_ptr<FakeServerInfo> fake = StartFake();
  ASSERT_NE(fake, nullptr);
  fake->Answer(503, "starting");
  absl::StatusOr<KvEventsDescriptor> d =
      FetchKvEventsDescriptor(UrlOf(fake->url()));
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("HTTP 503"));
  fake->Answer(404, "not found");
  d = FetchKvEventsDescriptor(UrlOf(fake->url()));
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("HTTP 404"));
}

TEST(ServerInfoClient, NobodyListeningIsTransient) {
  std::unique_ptr<FakeServerInfo> fake = StartFake();
  ASSERT_NE(fake, nullptr);
  const std::string url = fake->url();
  fake->Stop();  // the port is free again: connections are refused
  absl::StatusOr<KvEventsDescriptor> d = FetchKvEventsDescriptor(UrlOf(url));
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("no answer"));
}

// A worker that accepts the connection (the kernel does, from the
// backlog) and never answers: the fetch ends at its timeout.
TEST(ServerInfoClient, ASilentWorkerTimesOutAsTransient) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
            0);
  ASSERT_EQ(::listen(fd, 8), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length),
            0);
  const std::string url =
      "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<KvEventsDescriptor> d =
      FetchKvEventsDescriptor(UrlOf(url), std::chrono::milliseconds(300));
  const auto took = std::chrono::steady_clock::now() - start;
  ::close(fd);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_GE(took, std::chrono::milliseconds(250));
  EXPECT_LT(took, std::chrono::seconds(5));
}

}  // namespace server_info_client_test
}  // namespace kvindexer::bridge
