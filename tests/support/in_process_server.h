// InProcessServer: the kv_indexer.v1 KVIndexer service and the
// kvindexer.admin.v1 admin service of this process, served on one port of
// 127.0.0.1 with the server's transport settings, and a client stub for each
// over one channel. Test-only; header-only.
//
// OWNERSHIP: the services are the caller's and must outlive this object;
// declare it after them, so that the server shuts down before they go.
#ifndef KVINDEXER_TESTS_SUPPORT_IN_PROCESS_SERVER_H_
#define KVINDEXER_TESTS_SUPPORT_IN_PROCESS_SERVER_H_

#include <chrono>
#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"
#include "kv_indexer.grpc.pb.h"
#include "kvindexer_admin.grpc.pb.h"
#include "server/transport_settings.h"

namespace kvindexer::test_support {

class InProcessServer {
 public:
  // Starts serving at once. On destruction, calls in progress have
  // `shutdown_grace` to finish before they are cancelled.
  InProcessServer(grpc::Service& kv_service, grpc::Service& admin_service,
                  std::chrono::milliseconds shutdown_grace)
      : shutdown_grace_(shutdown_grace) {
    grpc::ServerBuilder builder;
    ApplyTransportSettings(builder);
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&kv_service);
    builder.RegisterService(&admin_service);
    server_ = builder.BuildAndStart();
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                       grpc::InsecureChannelCredentials());
    kv_ = ::kv_indexer::v1::KVIndexer::NewStub(channel);
    admin_ = ::kvindexer::admin::v1::KvIndexerAdmin::NewStub(channel);
  }
  ~InProcessServer() {
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now() + shutdown_grace_);
    }
  }
  InProcessServer(const InProcessServer&) = delete;
  InProcessServer& operator=(const InProcessServer&) = delete;

  bool started() const { return server_ != nullptr && port_ != 0; }
  ::kv_indexer::v1::KVIndexer::Stub& kv() { return *kv_; }
  ::kvindexer::admin::v1::KvIndexerAdmin::Stub& admin() { return *admin_; }

 private:
  const std::chrono::milliseconds shutdown_grace_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<::kv_indexer::v1::KVIndexer::Stub> kv_;
  std::unique_ptr<::kvindexer::admin::v1::KvIndexerAdmin::Stub> admin_;
};

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_IN_PROCESS_SERVER_H_
