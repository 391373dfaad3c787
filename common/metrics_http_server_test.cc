#include "common/metrics_http_server.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/http_get.h"
#include "tests/support/raw_http_client.h"

namespace kvindexer {
// Named rather than anonymous: unity builds merge neighbouring files'
// anonymous namespaces.
namespace metrics_http_server_test {

using namespace std::chrono_literals;
using ::kvindexer::test_support::HttpGet;
using ::kvindexer::test_support::RawHttpClient;
using ::kvindexer::test_support::RawHttpResponse;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using SteadyClock = std::chrono::steady_clock;

constexpr auto kWait = 5s;
// How fast a probe must answer while the endpoint is under attack: far
// below any request timeout, far above a loaded CI machine's jitter.
constexpr auto kProbeBound = 1500ms;

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

// A collector that holds the scrape that runs it until the test releases it
// (or kWait passes): a slow scrape.
class StuckCollector {
 public:
  void Run() {
    std::unique_lock<std::mutex> lock(mutex_);
    ++entered_;
    changed_.notify_all();
    changed_.wait_for(lock, kWait, [this] { return released_; });
  }
  bool WaitEntered(int times) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, kWait, [&] { return entered_ >= times; });
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      released_ = true;
    }
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int entered_ = 0;
  bool released_ = false;
};

std::unique_ptr<MetricsHttpServer> StartOnLoopback(
    const MetricsRegistry& registry, const MetricsHttpLimits& limits = {}) {
  auto server = MetricsHttpServer::Start(
      MetricsAddress{.host = "127.0.0.1", .port = 0}, registry,
      []() -> std::optional<std::string> { return std::nullopt; }, limits);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

RawHttpClient Connect(int port) {
  auto client = RawHttpClient::Connect(port, kWait);
  EXPECT_TRUE(client.ok()) << client.status();
  return *std::move(client);
}

// /healthz and /readyz answer 200 within kProbeBound each.
void ExpectProbesPrompt(int port) {
  for (const char* path : {"/healthz", "/readyz"}) {
    const SteadyClock::time_point start = SteadyClock::now();
    auto probe = HttpGet(port, path, kProbeBound);
    ASSERT_TRUE(probe.ok()) << path << ": " << probe.status();
    EXPECT_EQ(probe->status, 200) << path;
    EXPECT_LT(SteadyClock::now() - start, kProbeBound) << path;
  }
}

TEST(MetricsHttpServerTest, ProbesAnswerWhileAScrapeIsStuck) {
  MetricsRegistry registry;
  StuckCollector stuck;
  registry.AddCollector([&stuck](MetricsWriter&) { stuck.Run(); });
  auto server = StartOnLoopback(registry);
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  std::optional<absl::StatusOr<test_support::HttpResponse>> scrape;
  std::thread scraper([&] { scrape = HttpGet(port, "/metrics", kWait * 2); });
  ASSERT_TRUE(stuck.WaitEntered(1));
  ExpectProbesPrompt(port);
  stuck.Release();
  scraper.join();
  ASSERT_TRUE(scrape.has_value() && scrape->ok());
  EXPECT_EQ((*scrape)->status, 200);
}

TEST(MetricsHttpServerTest, ScrapesBeyondTheQueueAreRefusedWith503) {
  MetricsRegistry registry;
  StuckCollector stuck;
  registry.AddCollector([&stuck](MetricsWriter&) { stuck.Run(); });
  MetricsHttpLimits limits;
  limits.max_waiting_scrapes = 1;
  auto server = StartOnLoopback(registry, limits);
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  RawHttpClient first = Connect(port);
  ASSERT_TRUE(first.Send(request, kWait).ok());
  ASSERT_TRUE(stuck.WaitEntered(1));
  // One may wait behind the stuck scrape; of two more, one is refused.
  RawHttpClient second = Connect(port);
  RawHttpClient third = Connect(port);
  ASSERT_TRUE(second.Send(request, kWait).ok());
  ASSERT_TRUE(third.Send(request, kWait).ok());
  bool second_refused = false;
  bool third_refused = false;
  const SteadyClock::time_point give_up = SteadyClock::now() + kWait;
  while (!second_refused && !third_refused && SteadyClock::now() < give_up) {
    second_refused = second.WaitForClose(10ms);
    third_refused = !second_refused && third.WaitForClose(10ms);
  }
  ASSERT_NE(second_refused, third_refused);
  RawHttpClient& refused = second_refused ? second : third;
  RawHttpClient& queued = second_refused ? third : second;
  EXPECT_THAT(refused.pending(), StartsWith("HTTP/1.1 503 "));
  stuck.Release();
  for (RawHttpClient* client : {&first, &queued}) {
    absl::StatusOr<RawHttpResponse> response = client->ReadResponse(kWait);
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->status, 200);
  }
}

TEST(MetricsHttpServerTest, ProbesAnswerWhileSlowSendersHoldConnections) {
  MetricsRegistry registry;
  auto server = StartOnLoopback(registry);
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  // Far more senders than the endpoint has threads, each stopped halfway
  // through its head, on every path.
  std::vector<RawHttpClient> slow;
  for (int i = 0; i < 24; ++i) {
    slow.push_back(Connect(port));
    const char* path = i % 3 == 0   ? "/healthz"
                       : i % 3 == 1 ? "/readyz"
                                    : "/metrics";
    ASSERT_TRUE(
        slow.back()
            .Send(std::string("GET ") + path + " HTTP/1.1\r\nX-Slow: ", kWait)
            .ok());
  }
  ExpectProbesPrompt(port);
  auto scrape = HttpGet(port, "/metrics", kProbeBound);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(scrape->status, 200);
}

TEST(MetricsHttpServerTest, AnOversizedHeadIsRefusedWith431) {
  MetricsRegistry registry;
  auto server = StartOnLoopback(registry);
  ASSERT_NE(server, nullptr);
  RawHttpClient client = Connect(server->port());
  ASSERT_TRUE(client.Send(std::string(8192, 'a'), kWait).ok());
  ASSERT_TRUE(client.WaitForClose(kWait));
  EXPECT_THAT(client.pending(), StartsWith("HTTP/1.1 431 "));
  ExpectProbesPrompt(server->port());
}

TEST(MetricsHttpServerTest, KeepsCppHttplibsAnswersOnKeptAliveConnections) {
  MetricsRegistry registry;
  registry.AddCounter("kvindexer_test_events", "Events.").Increment(3);
  auto server = StartOnLoopback(registry);
  ASSERT_NE(server, nullptr);
  RawHttpClient client = Connect(server->port());
  // Three requests, one at a time, then two pipelined: the fifth response
  // on the connection says it closes, and it does.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        client.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", kWait).ok());
    absl::StatusOr<RawHttpResponse> health = client.ReadResponse(kWait);
    ASSERT_TRUE(health.ok()) << health.status();
    EXPECT_EQ(health->status, 200);
    EXPECT_EQ(health->body, "ok\n");
    EXPECT_THAT(health->headers, HasSubstr("Keep-Alive: timeout=2, max=5"));
    EXPECT_THAT(health->headers, HasSubstr("Content-Type: text/plain"));
  }
  ASSERT_TRUE(client
                  .Send("GET /metrics HTTP/1.1\r\nAccept-Encoding: gzip\r\n\r\n"
                        "GET /nowhere HTTP/1.1\r\n\r\n",
                        kWait)
                  .ok());
  absl::StatusOr<RawHttpResponse> scrape = client.ReadResponse(kWait);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(scrape->status, 200);
  // cpp-httplib still compresses for a client that asks.
  EXPECT_THAT(scrape->headers, HasSubstr("Content-Encoding: gzip"));
  absl::StatusOr<RawHttpResponse> missing = client.ReadResponse(kWait);
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_EQ(missing->status, 404);
  EXPECT_THAT(missing->headers, HasSubstr("Connection: close"));
  EXPECT_TRUE(client.WaitForClose(kWait));
}

TEST(MetricsHttpServerTest, BeyondLoopbackWarning) {
  const MetricsHttpLimits limits;
  EXPECT_EQ(BeyondLoopbackWarning({.host = "127.0.0.1", .port = 9464}, limits),
            std::nullopt);
  EXPECT_EQ(BeyondLoopbackWarning({.host = "::1", .port = 9464}, limits),
            std::nullopt);
  const std::optional<std::string> any =
      BeyondLoopbackWarning({.host = "0.0.0.0", .port = 9464}, limits);
  ASSERT_TRUE(any.has_value());
  EXPECT_THAT(*any, HasSubstr("beyond loopback on 0.0.0.0:9464"));
  EXPECT_THAT(*any, HasSubstr("docs/security.md"));
  const std::optional<std::string> v6 =
      BeyondLoopbackWarning({.host = "::", .port = 9464}, limits);
  ASSERT_TRUE(v6.has_value());
  EXPECT_THAT(*v6, HasSubstr("[::]:9464"));
}

}  // namespace metrics_http_server_test
}  // namespace kvindexer
