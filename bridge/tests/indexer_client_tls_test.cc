// IndexerClient over https://: a TLS gRPC server on 127.0.0.1 with the test
// certificate in testdata/, which this process trusts as its only root (the
// binary's main sets GRPC_DEFAULT_SSL_ROOTS_FILE_PATH before gRPC reads it,
// which is why these tests have an executable of their own).
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "bridge/indexer_client.h"
#include "bridge/stop_request.h"
#include "kv_indexer.grpc.pb.h"

#ifndef KVINDEXER_TLS_TESTDATA_DIR
#error "KVINDEXER_TLS_TESTDATA_DIR must name bridge/tests/testdata"
#endif

namespace kvindexer::bridge {
namespace {

using namespace std::chrono_literals;
namespace v1 = ::kv_indexer::v1;

const std::string kCertPath =
    std::string(KVINDEXER_TLS_TESTDATA_DIR) + "/tls_test_cert.pem";
const std::string kKeyPath =
    std::string(KVINDEXER_TLS_TESTDATA_DIR) + "/tls_test_key.pem";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

// Records the worker id of every apply it receives.
class RecordingService final : public v1::KVIndexer::Service {
 public:
  grpc::Status ApplyExternalKvBatch(
      grpc::ServerContext*, const v1::ApplyExternalKvBatchRequest* req,
      v1::ApplyExternalKvBatchResponse*) override {
    std::lock_guard<std::mutex> lock(mu_);
    workers_.push_back(req->worker_id());
    return grpc::Status::OK;
  }
  std::vector<std::string> workers() const {
    std::lock_guard<std::mutex> lock(mu_);
    return workers_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> workers_;
};

// A server on 127.0.0.1 with an ephemeral port, with or without TLS.
class LoopbackServer {
 public:
  explicit LoopbackServer(bool tls) {
    std::shared_ptr<grpc::ServerCredentials> creds;
    if (tls) {
      grpc::SslServerCredentialsOptions options;
      options.pem_key_cert_pairs.push_back(
          {ReadFile(kKeyPath), ReadFile(kCertPath)});
      creds = grpc::SslServerCredentials(options);
    } else {
      creds = grpc::InsecureServerCredentials();
    }
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", creds, &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~LoopbackServer() {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + 1s);
  }

  bool started() const { return server_ != nullptr && port_ > 0; }
  int port() const { return port_; }
  const RecordingService& service() const { return service_; }

 private:
  RecordingService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

TEST(IndexerClientTls, TestCertificateIsReadable) {
  EXPECT_NE(ReadFile(kCertPath).find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_NE(ReadFile(kKeyPath).find("PRIVATE KEY"), std::string::npos);
}

TEST(IndexerClientTls, HttpsAppliesReachATlsServer) {
  LoopbackServer server(/*tls=*/true);
  ASSERT_TRUE(server.started());
  StopRequest shutdown;
  const std::string endpoint =
      "https://127.0.0.1:" + std::to_string(server.port());
  auto client = IndexerClient::Connect(endpoint, &shutdown, 10s, 10s);
  ASSERT_TRUE(client.ok()) << client.status();

  v1::ApplyExternalKvBatchRequest req;
  req.set_worker_id("tls-worker");
  req.set_worker_address("10.0.0.1:30000");
  v1::ApplyExternalKvBatchResponse resp;
  const absl::Status applied = (*client)->Apply(req, &resp);
  EXPECT_TRUE(applied.ok()) << applied;
  EXPECT_EQ(server.service().workers(), std::vector<std::string>{"tls-worker"});
}

// https:// never falls back to plaintext: against a server without TLS the
// handshake fails and the client reports UNAVAILABLE (a retryable status for
// the bridge) within its connect timeout.
TEST(IndexerClientTls, HttpsToAPlaintextServerDoesNotConnect) {
  LoopbackServer server(/*tls=*/false);
  ASSERT_TRUE(server.started());
  StopRequest shutdown;
  const std::string endpoint =
      "https://127.0.0.1:" + std::to_string(server.port());
  auto client = IndexerClient::Connect(endpoint, &shutdown, 1500ms, 1s);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(server.service().workers().empty());
}

// And http:// to a TLS server is no connection either.
TEST(IndexerClientTls, HttpToATlsServerDoesNotConnect) {
  LoopbackServer server(/*tls=*/true);
  ASSERT_TRUE(server.started());
  StopRequest shutdown;
  const std::string endpoint =
      "http://127.0.0.1:" + std::to_string(server.port());
  auto client = IndexerClient::Connect(endpoint, &shutdown, 1500ms, 1s);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace kvindexer::bridge

int main(int argc, char** argv) {
  // gRPC reads the default roots once, at the first TLS channel; the test
  // certificate must be the only one this process trusts.
  setenv("GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",
         kvindexer::bridge::kCertPath.c_str(), 1);
  // A proxy from the environment would take the loopback connections.
  for (const char* proxy : {"grpc_proxy", "https_proxy", "http_proxy",
                            "HTTPS_PROXY", "HTTP_PROXY"}) {
    unsetenv(proxy);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
