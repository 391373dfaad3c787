// BoundedHttpListener on loopback: each bound (connection cap, head cap,
// request deadline, keep-alive timeout) replayed by a raw client. Waits are
// on conditions with deadlines; the timeouts under test are shrunk so that
// the whole file runs in about a second.
#include "common/bounded_http_listener.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/raw_http_client.h"
#include "tests/support/wait_until.h"

namespace kvindexer {
namespace bounded_http_listener_test {

using namespace std::chrono_literals;
using ::kvindexer::test_support::RawHttpClient;
using ::kvindexer::test_support::WaitUntil;
using ::testing::StartsWith;
using SteadyClock = std::chrono::steady_clock;

constexpr auto kBound = 5s;

// A listener on 127.0.0.1 whose dispatched connections the test holds.
class Harness {
 public:
  explicit Harness(const MetricsHttpLimits& limits) {
    auto bound = BoundedHttpListener::Bind(
        MetricsAddress{.host = "127.0.0.1", .port = 0}, limits);
    EXPECT_TRUE(bound.ok()) << bound.status();
    if (!bound.ok()) return;
    listener_ = *std::move(bound);
    listener_->Start([this](HttpConnection connection) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        dispatched_.push_back(std::move(connection));
      }
      changed_.notify_all();
    });
  }
  ~Harness() {
    if (listener_ != nullptr) listener_->Stop();
  }

  BoundedHttpListener& listener() { return *listener_; }
  int port() const { return listener_->port(); }

  RawHttpClient Connect() {
    auto client = RawHttpClient::Connect(port(), kBound);
    EXPECT_TRUE(client.ok()) << client.status();
    return *std::move(client);
  }

  // The next dispatched connection, waiting up to kBound; an empty one on
  // timeout.
  HttpConnection Next() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!changed_.wait_for(lock, kBound,
                           [this] { return !dispatched_.empty(); })) {
      return HttpConnection();
    }
    HttpConnection connection = std::move(dispatched_.front());
    dispatched_.pop_front();
    return connection;
  }

  size_t dispatched_count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return dispatched_.size();
  }

 private:
  std::unique_ptr<BoundedHttpListener> listener_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<HttpConnection> dispatched_;
};

TEST(BoundedHttpListenerTest, DispatchesWholeRequestsAndTakesConnectionsBack) {
  Harness harness(MetricsHttpLimits{});
  RawHttpClient client = harness.Connect();
  const std::string first = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
  // The head in two pieces, the start of a second request behind it.
  ASSERT_TRUE(client.Send("GET /a HTTP/1.1\r\nHo", kBound).ok());
  ASSERT_TRUE(client.Send("st: x\r\n\r\nGET /b", kBound).ok());
  HttpConnection connection = harness.Next();
  ASSERT_TRUE(connection.is_open());
  ASSERT_EQ(connection.received(), first + "GET /b");

  // Handed back with its request consumed, it waits for the rest of the
  // second one.
  connection.received().erase(0, first.size());
  harness.listener().Resume(std::move(connection));
  ASSERT_TRUE(client.Send(" HTTP/1.1\r\n\r\n", kBound).ok());
  HttpConnection again = harness.Next();
  ASSERT_TRUE(again.is_open());
  EXPECT_EQ(again.received(), "GET /b HTTP/1.1\r\n\r\n");
}

// A client may send its next request before it reads the answer: a
// connection handed back with a whole request in it is dispatched at once.
TEST(BoundedHttpListenerTest, APipelinedRequestIsDispatchedOnResume) {
  Harness harness(MetricsHttpLimits{});
  RawHttpClient client = harness.Connect();
  const std::string request = "GET /a HTTP/1.1\r\n\r\n";
  ASSERT_TRUE(client.Send(request + request, kBound).ok());
  HttpConnection connection = harness.Next();
  ASSERT_TRUE(connection.is_open());
  ASSERT_EQ(connection.received(), request + request);
  connection.received().erase(0, request.size());
  harness.listener().Resume(std::move(connection));
  HttpConnection again = harness.Next();
  ASSERT_TRUE(again.is_open());
  EXPECT_EQ(again.received(), request);
}

TEST(BoundedHttpListenerTest, AnEndlessRequestLineIsCutAtTheHeadCap) {
  MetricsHttpLimits limits;
  limits.max_head_bytes = 1024;
  Harness harness(limits);

  // Exactly the cap without a line end: 431, then the connection closes.
  RawHttpClient exact = harness.Connect();
  ASSERT_TRUE(exact.Send(std::string(1024, 'a'), kBound).ok());
  ASSERT_TRUE(exact.WaitForClose(kBound));
  EXPECT_THAT(exact.pending(),
              StartsWith("HTTP/1.1 431 Request Header Fields Too Large\r\n"));

  // An endless line: the server stops it long before 64 MiB.
  RawHttpClient endless = harness.Connect();
  const std::string chunk(1 << 20, 'a');
  size_t sent = 0;
  while (sent < (64u << 20) && endless.Send(chunk, kBound).ok()) {
    sent += chunk.size();
  }
  EXPECT_LT(sent, 64u << 20);
  EXPECT_TRUE(endless.WaitForClose(kBound));
  EXPECT_EQ(harness.dispatched_count(), 0u);
  EXPECT_TRUE(WaitUntil(
      [&] { return harness.listener().open_connections() == 0; }, kBound, 1ms));
}

TEST(BoundedHttpListenerTest, ABodyIsRefused) {
  Harness harness(MetricsHttpLimits{});
  RawHttpClient client = harness.Connect();
  ASSERT_TRUE(
      client.Send("POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\n", kBound)
          .ok());
  ASSERT_TRUE(client.WaitForClose(kBound));
  EXPECT_THAT(client.pending(), StartsWith("HTTP/1.1 413 "));
  EXPECT_EQ(harness.dispatched_count(), 0u);
}

TEST(BoundedHttpListenerTest, APartialRequestGets408AtTheDeadline) {
  MetricsHttpLimits limits;
  limits.request_timeout = 200ms;
  Harness harness(limits);
  const SteadyClock::time_point start = SteadyClock::now();
  RawHttpClient client = harness.Connect();
  ASSERT_TRUE(client.Send("GET /metrics HTTP/1.1\r\nHost: x\r\n", kBound).ok());
  ASSERT_TRUE(client.WaitForClose(kBound));
  EXPECT_GE(SteadyClock::now() - start, 200ms);
  EXPECT_THAT(client.pending(), StartsWith("HTTP/1.1 408 Request Timeout\r\n"));
}

TEST(BoundedHttpListenerTest, TricklingBytesDoNotExtendTheDeadline) {
  MetricsHttpLimits limits;
  limits.request_timeout = 300ms;
  Harness harness(limits);
  const SteadyClock::time_point start = SteadyClock::now();
  RawHttpClient client = harness.Connect();
  ASSERT_TRUE(client.Send("GET /metrics HTTP/1.1\r\n", kBound).ok());
  // One more header line each time the connection is still open after
  // 20 ms: a slowloris sender. The wait for the close paces it.
  bool closed = false;
  while (!closed && SteadyClock::now() - start < kBound) {
    closed = client.WaitForClose(20ms);
    if (!closed && !client.Send("X: y\r\n", kBound).ok()) {
      closed = client.WaitForClose(kBound);
    }
  }
  ASSERT_TRUE(closed);
  const auto elapsed = SteadyClock::now() - start;
  EXPECT_GE(elapsed, 300ms);
  EXPECT_LT(elapsed, 2s);
  EXPECT_EQ(harness.dispatched_count(), 0u);
}

TEST(BoundedHttpListenerTest, AnIdleConnectionClosesSilently) {
  MetricsHttpLimits limits;
  limits.request_timeout = 200ms;
  Harness harness(limits);
  RawHttpClient client = harness.Connect();
  ASSERT_TRUE(client.WaitForClose(kBound));
  EXPECT_EQ(client.pending(), "");
}

TEST(BoundedHttpListenerTest, AKeptAliveConnectionIdlesOnlyForTheKeepAlive) {
  MetricsHttpLimits limits;
  limits.request_timeout = 10s;
  limits.keep_alive_timeout = 200ms;
  Harness harness(limits);
  RawHttpClient client = harness.Connect();
  ASSERT_TRUE(client.Send("GET / HTTP/1.1\r\n\r\n", kBound).ok());
  HttpConnection connection = harness.Next();
  ASSERT_TRUE(connection.is_open());
  connection.received().clear();
  const SteadyClock::time_point resumed = SteadyClock::now();
  harness.listener().Resume(std::move(connection));
  ASSERT_TRUE(client.WaitForClose(kBound));
  const auto elapsed = SteadyClock::now() - resumed;
  EXPECT_GE(elapsed, 200ms);
  EXPECT_LT(elapsed, 5s);  // well before the request timeout
  EXPECT_EQ(client.pending(), "");
}

TEST(BoundedHttpListenerTest, AtTheCapTheLongestWaitingConnectionMakesRoom) {
  MetricsHttpLimits limits;
  limits.max_connections = 4;
  Harness harness(limits);
  BoundedHttpListener& listener = harness.listener();
  // Four idle connections, accepted one after the other.
  std::vector<RawHttpClient> idle;
  for (size_t i = 0; i < 4; ++i) {
    idle.push_back(harness.Connect());
    ASSERT_TRUE(WaitUntil([&] { return listener.open_connections() == i + 1; },
                          kBound, 1ms))
        << listener.open_connections();
  }
  // A fifth takes the place of the first.
  RawHttpClient probe = harness.Connect();
  ASSERT_TRUE(probe.Send("GET /healthz HTTP/1.1\r\n\r\n", kBound).ok());
  HttpConnection dispatched = harness.Next();
  ASSERT_TRUE(dispatched.is_open());
  EXPECT_TRUE(idle[0].WaitForClose(kBound));
  EXPECT_EQ(listener.open_connections(), 4u);

  // Many more beyond the cap: never more than four open, and a request
  // sent at once still gets through.
  std::vector<RawHttpClient> crowd;
  for (int i = 0; i < 40; ++i) {
    crowd.push_back(harness.Connect());
    ASSERT_LE(listener.open_connections(), 4u);
  }
  RawHttpClient late = harness.Connect();
  ASSERT_TRUE(late.Send("GET /readyz HTTP/1.1\r\n\r\n", kBound).ok());
  HttpConnection late_dispatched = harness.Next();
  ASSERT_TRUE(late_dispatched.is_open());
  EXPECT_EQ(late_dispatched.received(), "GET /readyz HTTP/1.1\r\n\r\n");
  EXPECT_LE(listener.open_connections(), 4u);
}

TEST(BoundedHttpListenerTest, AtTheCapWithNoneWaitingANewConnectionCloses) {
  MetricsHttpLimits limits;
  limits.max_connections = 2;
  Harness harness(limits);
  RawHttpClient a = harness.Connect();
  RawHttpClient b = harness.Connect();
  ASSERT_TRUE(a.Send("GET / HTTP/1.1\r\n\r\n", kBound).ok());
  ASSERT_TRUE(b.Send("GET / HTTP/1.1\r\n\r\n", kBound).ok());
  // Both dispatched and held, as while a lane answers them.
  HttpConnection held_a = harness.Next();
  HttpConnection held_b = harness.Next();
  ASSERT_TRUE(held_a.is_open());
  ASSERT_TRUE(held_b.is_open());
  RawHttpClient refused = harness.Connect();
  EXPECT_TRUE(refused.WaitForClose(kBound));
  EXPECT_EQ(harness.listener().open_connections(), 2u);
  // Once one is closed there is room again.
  held_a.Close();
  RawHttpClient admitted = harness.Connect();
  ASSERT_TRUE(admitted.Send("GET / HTTP/1.1\r\n\r\n", kBound).ok());
  EXPECT_TRUE(harness.Next().is_open());
}

TEST(BoundedHttpListenerTest, StopClosesWaitingConnectionsAndThePort) {
  Harness harness(MetricsHttpLimits{});
  RawHttpClient idle = harness.Connect();
  ASSERT_TRUE(WaitUntil(
      [&] { return harness.listener().open_connections() == 1; }, kBound, 1ms));
  const int port = harness.port();
  harness.listener().Stop();
  harness.listener().Stop();  // idempotent
  EXPECT_TRUE(idle.WaitForClose(kBound));
  EXPECT_EQ(harness.listener().open_connections(), 0u);
  EXPECT_FALSE(RawHttpClient::Connect(port, kBound).ok());
}

}  // namespace bounded_http_listener_test
}  // namespace kvindexer
