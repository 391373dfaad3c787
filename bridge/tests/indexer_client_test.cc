// IndexerClient::Connect failure modes: every one is UNAVAILABLE (a
// transport error to retry; docs/bridge-events.md,
// "Configuration > Startup validation" and
// "Sending and errors > Error classes"), bounded by the connect timeout
// and interruptible by shutdown.
#include "bridge/indexer_client.h"

#include <chrono>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace {

using namespace std::chrono_literals;

TEST(IndexerClient, UnusableEndpointIsUnavailable) {
  ShutdownSignal shutdown;
  for (const char* endpoint : {"not a uri", "127.0.0.1:50051", "http://h:0"}) {
    auto client = IndexerClient::Connect(endpoint, &shutdown, 200ms);
    ASSERT_FALSE(client.ok()) << endpoint;
    EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(std::string(client.status().message()),
                ::testing::HasSubstr("invalid indexer endpoint"));
  }
}

TEST(IndexerClient, NothingListeningTimesOut) {
  ShutdownSignal shutdown;
  const auto start = std::chrono::steady_clock::now();
  // Port 1 on loopback: connection refused.
  auto client = IndexerClient::Connect("http://127.0.0.1:1", &shutdown, 300ms);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(IndexerClient, ShutdownInterruptsConnect) {
  ShutdownSignal shutdown;
  std::thread trigger([&shutdown] {
    shutdown.WaitFor(200ms);
    shutdown.Trigger();
  });
  const auto start = std::chrono::steady_clock::now();
  auto client = IndexerClient::Connect("http://127.0.0.1:1", &shutdown, 60s);
  trigger.join();
  ASSERT_FALSE(client.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

}  // namespace
}  // namespace kvindexer::bridge
