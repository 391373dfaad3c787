// IndexerClient::Connect failure modes: every one is UNAVAILABLE (a
// transport error to retry; docs/bridge-events.md,
// "Configuration > Startup validation" and
// "Sending and errors > Error classes"), bounded by the connect timeout
// and interruptible by shutdown. And the heartbeat's request metadata
// ("Recovery > Worker liveness") as a server receives it.
#include "bridge/indexer_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"

namespace kvindexer::bridge {
namespace {

using namespace std::chrono_literals;

TEST(IndexerClient, UnusableEndpointIsUnavailable) {
  StopRequest shutdown;
  for (const char* endpoint : {"not a uri", "127.0.0.1:50051", "http://h:0"}) {
    auto client = IndexerClient::Connect(endpoint, &shutdown, 200ms);
    ASSERT_FALSE(client.ok()) << endpoint;
    EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(std::string(client.status().message()),
                ::testing::HasSubstr("invalid indexer endpoint"));
  }
}

TEST(IndexerClient, NothingListeningTimesOut) {
  StopRequest shutdown;
  // Port 1 on loopback: connection refused. The message says which way
  // Connect ended: its own timeout.
  auto client = IndexerClient::Connect("http://127.0.0.1:1", &shutdown, 300ms);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(client.status().message()),
              ::testing::HasSubstr("within 300 ms"));
}

// A loopback TCP listener that accepts connections and never answers: a
// gRPC channel to it connects at the TCP level and then waits for the
// server's HTTP/2 settings forever.
class SilentListener {
 public:
  SilentListener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        listen(fd_, 4) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
  }
  ~SilentListener() {
    for (int fd : accepted_) close(fd);
    if (fd_ >= 0) close(fd_);
  }

  int port() const { return port_; }
  // Waits up to `timeout` for a client to connect; true once one has.
  bool Accept(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(timeout.count())) != 1) return false;
    const int fd = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return false;
    accepted_.push_back(fd);
    return true;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::vector<int> accepted_;
};

TEST(IndexerClient, ShutdownInterruptsConnect) {
  SilentListener listener;
  ASSERT_GT(listener.port(), 0);
  StopRequest shutdown;
  absl::StatusOr<std::unique_ptr<IndexerClient>> client =
      absl::UnavailableError("not run");
  std::thread connector([&] {
    client = IndexerClient::Connect(
        "http://127.0.0.1:" + std::to_string(listener.port()), &shutdown, 60s);
  });
  // Once the channel has connected at the TCP level, Connect is waiting for
  // it to become ready: shutdown arrives in the middle of the wait.
  const bool dialled = listener.Accept(30s);
  shutdown.Trigger();
  connector.join();
  ASSERT_TRUE(dialled) << "Connect never dialled the listener";
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable);
  // Shutdown ended it, not the 60 s timeout.
  EXPECT_THAT(std::string(client.status().message()),
              ::testing::HasSubstr("shutdown requested"));
}

// Records the heartbeat metadata of every apply (nullopt: absent).
class MetadataRecorder final : public kv_indexer::v1::KVIndexer::Service {
 public:
  grpc::Status ApplyExternalKvBatch(
      grpc::ServerContext* context,
      const kv_indexer::v1::ApplyExternalKvBatchRequest* request,
      kv_indexer::v1::ApplyExternalKvBatchResponse* response) override {
    std::optional<std::string> ttl;
    const auto& metadata = context->client_metadata();
    if (auto it = metadata.find(std::string(kHeartbeatTtlHeader));
        it != metadata.end()) {
      ttl = std::string(it->second.data(), it->second.size());
    }
    response->set_applied_seq(request->seq());
    std::lock_guard<std::mutex> lock(mu_);
    ttls_.push_back(ttl);
    return grpc::Status::OK;
  }
  std::vector<std::optional<std::string>> ttls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return ttls_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::optional<std::string>> ttls_;
};

TEST(IndexerClient, HeartbeatCarriesTheTtlMetadata) {
  MetadataRecorder service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ASSERT_GT(port, 0);

  StopRequest shutdown;
  auto client = IndexerClient::Connect(
      "http://127.0.0.1:" + std::to_string(port), &shutdown, 30s);
  ASSERT_TRUE(client.ok()) << client.status();
  kv_indexer::v1::ApplyExternalKvBatchRequest request;
  request.set_worker_id("w");
  kv_indexer::v1::ApplyExternalKvBatchResponse response;
  ASSERT_TRUE((*client)->Apply(request, &response).ok());
  ASSERT_TRUE((*client)->Heartbeat(request, 30000, &response).ok());
  ASSERT_TRUE((*client)->Heartbeat(request, 4294967295u, &response).ok());
  ASSERT_TRUE((*client)->Apply(request, &response).ok());
  EXPECT_THAT(service.ttls(),
              ::testing::ElementsAre(std::nullopt, "30000", "4294967295",
                                     std::nullopt));
  server->Shutdown(std::chrono::system_clock::now() + 1s);
}

}  // namespace
}  // namespace kvindexer::bridge
