// WriteAuthorizer through the service (server/write_authorizer.h,
// server/kv_indexer_service.h): the three mutations need the token, the
// reads never look at it, the refusal codes, and what the refusal log says
// (never the token or the presented value).
#include <chrono>
#include <memory>
#include <string>

#include "common/clock.h"
#include "core/indexer.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "server/kv_indexer_service.h"
#include "server/transport_settings.h"
#include "server/write_authorizer.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"
#include "tests/support/test_log_capture.h"

namespace kvindexer::write_authorizer_test {
namespace {

using ::kv_indexer::v1::KVIndexer;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

constexpr char kToken[] = "tok-3f9a1c77e0b24d5e";
constexpr char kWrong[] = "tok-guess-0000000000";

class WriteAuthorizerServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    ApplyTransportSettings(builder);
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = KVIndexer::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                            grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  // A context carrying `authorization: <value>` unless value is null.
  static std::unique_ptr<grpc::ClientContext> Context(const char* value) {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + 10s);
    if (value != nullptr) context->AddMetadata("authorization", value);
    return context;
  }

  grpc::Status Apply(const char* authorization, int64_t hash = 1) {
    v1::ApplyExternalKvBatchResponse resp;
    return stub_->ApplyExternalKvBatch(
        Context(authorization).get(),
        test_support::Batch("w1", "10.0.0.1:1").Report(kTierHbm, {hash}),
        &resp);
  }
  grpc::Status Replace(const char* authorization) {
    v1::ReplaceExternalKvSnapshotRequest req;
    req.set_worker_id("w1");
    v1::ReplaceExternalKvSnapshotResponse resp;
    return stub_->ReplaceExternalKvSnapshot(Context(authorization).get(), req,
                                            &resp);
  }
  grpc::Status Configure(const char* authorization) {
    v1::ConfigureExpectedWorkersRequest req;
    v1::ConfigureExpectedWorkersResponse resp;
    return stub_->ConfigureExpectedWorkers(Context(authorization).get(), req,
                                           &resp);
  }

  durable::TestLogCapture logs_;
  test_support::ModelBackend backend_;
  Indexer indexer_{&backend_};
  WriteAuthorizer authorizer_{kToken};
  KvIndexerService service_{indexer_.operations(),    8,
                            WallClock::Real(),        nullptr,
                            /*read_heartbeats=*/true, &authorizer_};
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<KVIndexer::Stub> stub_;
};

const std::string kBearerRight = std::string("Bearer ") + kToken;
const std::string kBearerWrong = std::string("Bearer ") + kWrong;

TEST_F(WriteAuthorizerServiceTest, MutationsNeedTheToken) {
  EXPECT_EQ(Apply(nullptr).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Apply(kToken).error_code(), grpc::StatusCode::UNAUTHENTICATED)
      << "a bare token is not a bearer token";
  EXPECT_EQ(Apply("Basic dXNlcjpwYXNz").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Apply("Bearer ").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Apply(kBearerWrong.c_str()).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // A prefix or an extension of the token is no match.
  EXPECT_EQ(Apply((kBearerRight + "x").c_str()).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Apply(kBearerRight.substr(0, kBearerRight.size() - 1).c_str())
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(indexer_.durable_state().worker_count(), 0u);

  EXPECT_TRUE(Apply(kBearerRight.c_str(), 7).ok());
  // The scheme's letter case does not matter.
  EXPECT_TRUE(Apply(("bearer " + std::string(kToken)).c_str(), 8).ok());
  EXPECT_EQ(indexer_.durable_state().worker_count(), 1u);

  EXPECT_EQ(Replace(nullptr).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Replace(kBearerWrong.c_str()).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(Replace(kBearerRight.c_str()).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Configure(nullptr).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Configure(kBearerWrong.c_str()).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(Configure(kBearerRight.c_str()).ok());
}

// Auth runs before the size check: an unauthenticated peer does not learn
// the request bound.
TEST_F(WriteAuthorizerServiceTest, AuthComesBeforeTheSizeCheck) {
  test_support::Batch batch("w1", "10.0.0.1:1");
  test_support::Hashes many(1049600, 5);  // > 8 MiB encoded
  batch.Report(kTierHbm, many);
  v1::ApplyExternalKvBatchResponse resp;
  EXPECT_EQ(stub_->ApplyExternalKvBatch(Context(nullptr).get(), batch, &resp)
                .error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // With the token, the same request meets the size check.
  EXPECT_EQ(stub_
                ->ApplyExternalKvBatch(Context(kBearerRight.c_str()).get(),
                                       batch, &resp)
                .error_code(),
            grpc::StatusCode::OUT_OF_RANGE);
}

TEST_F(WriteAuthorizerServiceTest, ReadsStayOpen) {
  ASSERT_TRUE(Apply(kBearerRight.c_str(), 9).ok());
  v1::MatchExternalKvPrefixRequest prefix;
  prefix.add_hashes(9);
  v1::MatchExternalKvPrefixResponse prefix_resp;
  EXPECT_TRUE(
      stub_->MatchExternalKvPrefix(Context(nullptr).get(), prefix, &prefix_resp)
          .ok());
  v1::MatchExternalKvRequest match;
  match.add_hashes(9);
  v1::MatchExternalKvResponse match_resp;
  EXPECT_TRUE(
      stub_->MatchExternalKv(Context(nullptr).get(), match, &match_resp).ok());
  EXPECT_EQ(match_resp.matches_size(), 1);
  v1::GetExternalKvHitCountsRequest hits;
  hits.add_hashes(9);
  v1::GetExternalKvHitCountsResponse hits_resp;
  EXPECT_TRUE(stub_
                  ->GetExternalKvHitCounts(Context(kBearerWrong.c_str()).get(),
                                           hits, &hits_resp)
                  .ok());
}

TEST_F(WriteAuthorizerServiceTest, RefusalsAreLoggedThrottledWithoutTokens) {
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(Apply(nullptr).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Apply(kBearerWrong.c_str()).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  EXPECT_EQ(authorizer_.unauthenticated_total(), 5u);
  EXPECT_EQ(authorizer_.permission_denied_total(), 3u);
  const auto warns = logs_.Lines(spdlog::level::warn);
  // 1st, 2nd and 4th of five; 1st and 2nd of three.
  ASSERT_EQ(warns.size(), 5u) << ::testing::PrintToString(warns);
  for (const std::string& line : warns) {
    EXPECT_THAT(line,
                HasSubstr("/kv_indexer.v1.KVIndexer/ApplyExternalKvBatch"));
    EXPECT_THAT(line, HasSubstr("peer=ipv4:127.0.0.1:"));
    EXPECT_THAT(line, Not(HasSubstr(kToken)));
    EXPECT_THAT(line, Not(HasSubstr(kWrong)));
  }
  EXPECT_THAT(warns[0], HasSubstr("UNAUTHENTICATED"));
  EXPECT_THAT(warns[4], HasSubstr("PERMISSION_DENIED"));
}

TEST(WriteAuthorizerTest, DisabledAllowsAndTokensCompare) {
  EXPECT_FALSE(WriteAuthorizer().enabled());
  EXPECT_TRUE(WriteAuthorizer("t").enabled());
  EXPECT_TRUE(TokensEqual("abc", "abc"));
  EXPECT_FALSE(TokensEqual("abd", "abc"));
  EXPECT_FALSE(TokensEqual("ab", "abc"));
  EXPECT_FALSE(TokensEqual("abcd", "abc"));
  EXPECT_FALSE(TokensEqual("", "abc"));
}

}  // namespace
}  // namespace kvindexer::write_authorizer_test
