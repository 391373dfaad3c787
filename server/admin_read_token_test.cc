// The admin read token through the admin service (server/read_authorizer.h,
// server/admin_service.h), in process over 127.0.0.1: with a read token
// configured every admin call needs it or the write token, the refusal
// codes and what the refusal log says; without one the admin calls stay
// open; the router's reads never look at it.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "common/clock.h"
#include "core/indexer.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "kvindexer_admin.grpc.pb.h"
#include "server/admin_service.h"
#include "server/kv_indexer_service.h"
#include "server/read_authorizer.h"
#include "server/transport_settings.h"
#include "server/write_authorizer.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"
#include "tests/support/test_log_capture.h"

namespace kvindexer::admin_read_token_test {
namespace {

namespace v1 = ::kv_indexer::v1;
using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kReadToken[] = "read-7c1e9b55a0f34d2b";
constexpr char kWriteToken[] = "write-0d6f2a9ce18b4e73";
constexpr char kWrong[] = "read-guess-000000000";

class AdminReadTokenTest : public ::testing::Test {
 protected:
  // Serves the KVIndexer and admin services with `reads` and `writes`
  // (either may be disabled).
  void Start(ReadAuthorizer reads, WriteAuthorizer writes) {
    reads_ = std::move(reads);
    writes_ = std::move(writes);
    indexer_ = std::make_unique<Indexer>(&backend_);
    service_ = std::make_unique<KvIndexerService>(
        indexer_->operations(), 8, WallClock::Real(), nullptr, true, &writes_);
    AdminSources sources;
    sources.indexer = &indexer_->operator_view();
    sources.authorizer = &writes_;
    sources.read_authorizer = &reads_;
    sources.max_worker_id_bytes = RequestLimits{}.max_worker_id_bytes;
    admin_ = std::make_unique<AdminService>(std::move(sources));
    grpc::ServerBuilder builder;
    ApplyTransportSettings(builder);
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(service_.get());
    builder.RegisterService(admin_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                       grpc::InsecureChannelCredentials());
    kv_ = v1::KVIndexer::NewStub(channel);
    admin_stub_ = admin_v1::KvIndexerAdmin::NewStub(channel);
  }
  void StartWithBothTokens() {
    Start(ReadAuthorizer(kReadToken, kWriteToken),
          WriteAuthorizer(kWriteToken));
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

 public:
  // The calls, public so that a test can name them as member pointers.

  // A context carrying `authorization: Bearer <token>` unless token is
  // null.
  static std::unique_ptr<grpc::ClientContext> Context(const char* token) {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + 10s);
    if (token != nullptr) {
      context->AddMetadata("authorization", std::string("Bearer ") + token);
    }
    return context;
  }

  grpc::Status GetStats(const char* token) {
    admin_v1::GetStatsResponse response;
    return admin_stub_->GetStats(Context(token).get(),
                                 admin_v1::GetStatsRequest(), &response);
  }
  grpc::Status ListWorkers(const char* token) {
    admin_v1::ListWorkersResponse response;
    return admin_stub_->ListWorkers(Context(token).get(),
                                    admin_v1::ListWorkersRequest(), &response);
  }
  grpc::Status Explain(const char* token) {
    admin_v1::ExplainPrefixRequest request;
    request.add_hashes(1);
    admin_v1::ExplainPrefixResponse response;
    return admin_stub_->ExplainPrefix(Context(token).get(), request, &response);
  }
  // Removes w1, applied first (with the write token, when there is one) so
  // that a removal that passes the checks succeeds.
  grpc::Status Remove(const char* token) {
    v1::ApplyExternalKvBatchResponse applied;
    const grpc::Status apply = kv_->ApplyExternalKvBatch(
        Context(writes_.enabled() ? kWriteToken : nullptr).get(),
        test_support::Batch("w1", "10.0.0.1:1").Report(kTierHbm, {1}),
        &applied);
    EXPECT_TRUE(apply.ok()) << apply.error_message();
    admin_v1::RemoveWorkerRequest request;
    request.set_worker_id("w1");
    admin_v1::RemoveWorkerResponse response;
    return admin_stub_->RemoveWorker(Context(token).get(), request, &response);
  }

 protected:
  test_support::ModelBackend backend_;
  ReadAuthorizer reads_;
  WriteAuthorizer writes_;
  std::unique_ptr<Indexer> indexer_;
  std::unique_ptr<KvIndexerService> service_;
  std::unique_ptr<AdminService> admin_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::KVIndexer::Stub> kv_;
  std::unique_ptr<admin_v1::KvIndexerAdmin::Stub> admin_stub_;
};

TEST_F(AdminReadTokenTest, WithoutAReadTokenAdminReadsAreOpen) {
  Start(ReadAuthorizer(), WriteAuthorizer(kWriteToken));
  EXPECT_TRUE(GetStats(nullptr).ok());
  EXPECT_TRUE(ListWorkers(nullptr).ok());
  EXPECT_TRUE(Explain(nullptr).ok());
  // The write token still guards the mutation.
  EXPECT_EQ(Remove(nullptr).error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(AdminReadTokenTest, EveryAdminReadNeedsAToken) {
  StartWithBothTokens();
  for (const auto& call :
       {&AdminReadTokenTest::GetStats, &AdminReadTokenTest::ListWorkers,
        &AdminReadTokenTest::Explain}) {
    const grpc::Status missing = (this->*call)(nullptr);
    EXPECT_EQ(missing.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_THAT(missing.error_message(),
                HasSubstr("KV_INDEXER_ADMIN_READ_TOKEN_FILE"));
    const grpc::Status wrong = (this->*call)(kWrong);
    EXPECT_EQ(wrong.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_TRUE((this->*call)(kReadToken).ok());
    // Whoever may write may read.
    EXPECT_TRUE((this->*call)(kWriteToken).ok());
  }
  EXPECT_EQ(reads_.unauthenticated_total(), 3u);
  EXPECT_EQ(reads_.permission_denied_total(), 3u);
}

TEST_F(AdminReadTokenTest, TheReadTokenDoesNotWrite) {
  StartWithBothTokens();
  EXPECT_EQ(Remove(kReadToken).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Remove(nullptr).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Remove(kWriteToken).ok());
}

TEST_F(AdminReadTokenTest, WithoutAWriteTokenTheReadTokenGuardsRemoval) {
  Start(ReadAuthorizer(kReadToken, ""), WriteAuthorizer());
  EXPECT_EQ(Remove(nullptr).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Remove(kWriteToken).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(Remove(kReadToken).ok());
}

TEST_F(AdminReadTokenTest, TheRoutersReadsNeverLookAtIt) {
  StartWithBothTokens();
  v1::MatchExternalKvResponse match;
  EXPECT_TRUE(kv_->MatchExternalKv(Context(nullptr).get(),
                                   test_support::MatchRequest({1}), &match)
                  .ok());
  v1::MatchExternalKvPrefixResponse prefix;
  EXPECT_TRUE(kv_->MatchExternalKvPrefix(Context(nullptr).get(),
                                         test_support::PrefixRequest({1}),
                                         &prefix)
                  .ok());
}

TEST_F(AdminReadTokenTest, RefusalsAreLoggedWithoutTheTokens) {
  StartWithBothTokens();
  durable::TestLogCapture capture;
  ASSERT_EQ(GetStats(nullptr).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  ASSERT_EQ(GetStats(kWrong).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  std::string log;
  for (const std::string& line : capture.Lines(spdlog::level::warn)) {
    log += line + "\n";
  }
  EXPECT_THAT(log, HasSubstr("admin call refused: UNAUTHENTICATED "
                             "method=/kvindexer.admin.v1.KvIndexerAdmin/"
                             "GetStats"));
  EXPECT_THAT(log, HasSubstr("admin call refused: PERMISSION_DENIED"));
  EXPECT_THAT(log, Not(HasSubstr(kWrong)));
  EXPECT_THAT(log, Not(HasSubstr(kReadToken)));
  EXPECT_THAT(log, Not(HasSubstr(kWriteToken)));
}

}  // namespace
}  // namespace kvindexer::admin_read_token_test
