#include "common/metrics_http_server.h"

#include <atomic>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/http_get.h"

namespace kvindexer {
namespace {

using ::kvindexer::test_support::HttpGet;
using ::testing::HasSubstr;

TEST(MetricsHttpServerTest, ServesMetricsProbesAndNotFound) {
  MetricsRegistry registry;
  registry.AddCounter("kvindexer_test_events", "Events.").Increment(7);
  std::atomic<bool> ready{false};
  auto server = MetricsHttpServer::Start(
      MetricsAddress{.host = "127.0.0.1", .port = 0}, registry,
      [&ready]() -> std::optional<std::string> {
        if (ready.load()) return std::nullopt;
        return "recovering";
      });
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  ASSERT_GT(port, 0);
  EXPECT_EQ((*server)->bound_address(), "127.0.0.1:" + std::to_string(port));

  auto metrics = HttpGet(port, "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(metrics->status, 200);
  EXPECT_THAT(metrics->headers,
              HasSubstr("Content-Type: text/plain; version=0.0.4"));
  EXPECT_THAT(metrics->body, HasSubstr("\nkvindexer_test_events_total 7\n"));

  auto health = HttpGet(port, "/healthz");
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->status, 200);

  auto not_ready = HttpGet(port, "/readyz");
  ASSERT_TRUE(not_ready.ok()) << not_ready.status();
  EXPECT_EQ(not_ready->status, 503);
  EXPECT_EQ(not_ready->body, "not ready: recovering\n");
  ready = true;
  auto now_ready = HttpGet(port, "/readyz");
  ASSERT_TRUE(now_ready.ok()) << now_ready.status();
  EXPECT_EQ(now_ready->status, 200);

  auto missing = HttpGet(port, "/metrics/other");
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_EQ(missing->status, 404);

  (*server)->Stop();
  (*server)->Stop();  // idempotent
  EXPECT_FALSE(HttpGet(port, "/healthz").ok());
}

TEST(MetricsHttpServerTest, PortInUseIsUnavailable) {
  MetricsRegistry registry;
  auto first = MetricsHttpServer::Start(
      MetricsAddress{.host = "127.0.0.1", .port = 0}, registry, nullptr);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = MetricsHttpServer::Start(
      MetricsAddress{.host = "127.0.0.1", .port = (*first)->port()}, registry,
      nullptr);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("127.0.0.1:"));
}

}  // namespace
}  // namespace kvindexer
