// grpc.health.v1, server reflection and the backend-failure rule
// (docs/health.md), in process: a server wired as kv-indexer-server wires
// it (EnableHealthAndReflection, ServingHealth fed by the Indexer's failure
// callback) on 127.0.0.1 with an ephemeral port, over a MutationFailingBackend
// that wraps ModelBackend, so that a test can make writes fail while reads
// go on. The health and reflection clients are tests/support/grpc_probes.h.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "core/indexer.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "server/kv_indexer_service.h"
#include "server/serving_health.h"
#include "server/transport_settings.h"
#include "tests/support/fake_clock.h"
#include "tests/support/grpc_probes.h"
#include "tests/support/make_backend_status.h"
#include "tests/support/model_backend.h"
#include "tests/support/mutation_failing_backend.h"
#include "tests/support/requests.h"
#include "tests/support/test_log_capture.h"

namespace kvindexer {
// Named rather than anonymous: CI compiles test files in batches (unity
// builds), where anonymous namespaces of neighbouring files merge.
namespace health_service_test {

using namespace std::chrono_literals;
using ::kv_indexer::v1::ApplyExternalKvBatchResponse;
using ::kv_indexer::v1::KVIndexer;
using ::kv_indexer::v1::MatchExternalKvPrefixResponse;
using test_support::Batch;
using test_support::MakeBackendStatus;
using test_support::ModelBackend;
using test_support::MutationFailingBackend;
using test_support::PrefixRequest;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

constexpr auto kWaitBound = 10s;

constexpr uint64_t kServing = test_support::kHealthServing;
constexpr uint64_t kNotServing = test_support::kHealthNotServing;

// ---------------------------------------------------------------------------
// The server

class HealthServer {
 public:
  // `reflection` false: as KV_INDEXER_GRPC_REFLECTION=off.
  explicit HealthServer(const MonotonicClock* clock = nullptr,
                        bool reflection = true)
      : backend_(&model_),
        indexer_(&backend_, /*gate_log=*/nullptr, RequestLimits{},
                 kBackendAbiMinor, clock),
        service_(indexer_.operations(), /*prefix_query_max_inflight=*/32,
                 WallClock::Real(),
                 /*rejection_log=*/nullptr, /*read_heartbeats=*/false) {
    // As the server does it (ServerWiring::Serve, server/server_wiring.cc).
    EnableHealthAndReflection();
    grpc::ServerBuilder builder;
    ApplyTransportSettings(builder);
    if (!reflection) BuildWithoutReflection(builder);
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    if (server_ == nullptr) return;
    health_ = std::make_unique<ServingHealth>(server_->GetHealthCheckService(),
                                              HealthServiceNames());
    indexer_.operator_view().SetBackendFailureCallback(
        [this](const std::string& failure) {
          health_->BackendFailed(failure);
        });
    health_->Listening();
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                   grpc::InsecureChannelCredentials());
    stub_ = KVIndexer::NewStub(channel_);
  }
  ~HealthServer() {
    if (server_ == nullptr) return;
    health_->ShuttingDown();
    server_->Shutdown(std::chrono::system_clock::now());
    indexer_.operator_view().SetBackendFailureCallback(nullptr);
  }

  bool started() const { return server_ != nullptr && port_ != 0; }
  MutationFailingBackend& backend() { return backend_; }
  Indexer& indexer() { return indexer_; }
  ServingHealth& health() { return *health_; }
  KVIndexer::Stub& stub() { return *stub_; }

  test_support::HealthAnswer Check(const std::string& service) {
    return test_support::CheckHealth(channel_, service, kWaitBound);
  }
  std::shared_ptr<grpc::Channel> channel() { return channel_; }

 private:
  ModelBackend model_;
  MutationFailingBackend backend_;
  Indexer indexer_;
  KvIndexerService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<ServingHealth> health_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<KVIndexer::Stub> stub_;
};

grpc::Status Apply(HealthServer& s, const Batch& batch) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kWaitBound);
  ApplyExternalKvBatchResponse resp;
  return s.stub().ApplyExternalKvBatch(&context, batch, &resp);
}

void ExpectEveryName(HealthServer& s, uint64_t serving_status) {
  for (const std::string& name : HealthServiceNames()) {
    const test_support::HealthAnswer answer = s.Check(name);
    EXPECT_EQ(answer.code, grpc::StatusCode::OK)
        << "service \"" << name << "\"";
    EXPECT_EQ(answer.status, serving_status) << "service \"" << name << "\"";
  }
}

// ---------------------------------------------------------------------------
// Health

TEST(HealthServiceTest, ServingAfterStartForTheServerAndEachService) {
  HealthServer s;
  ASSERT_TRUE(s.started());
  EXPECT_THAT(HealthServiceNames(),
              UnorderedElementsAre("", "kv_indexer.v1.KVIndexer",
                                   "kvindexer.admin.v1.KvIndexerAdmin"));
  ExpectEveryName(s, kServing);
  // A name the server does not publish is gRPC's NOT_FOUND.
  EXPECT_EQ(s.Check("no.such.Service").code, grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(s.health().serving());
  EXPECT_EQ(s.health().reason(), std::nullopt);
  EXPECT_EQ(s.indexer().operator_view().BackendFailure(), std::nullopt);
}

TEST(HealthServiceTest, InternalFromAnApplyTurnsNotServingWhileReadsGoOn) {
  HealthServer s;
  ASSERT_TRUE(s.started());
  ASSERT_TRUE(Apply(s, Batch("w1", "10.0.0.1:9000").Report(1, {1, 2, 3})).ok());

  s.backend().FailMutationsWith(MakeBackendStatus(
      BackendCode::kInternal, "writer copy inconsistent; recreate"));
  const grpc::Status refused =
      Apply(s, Batch("w1", "10.0.0.1:9000").Report(1, {4}));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INTERNAL);

  const std::optional<std::string> failure =
      s.indexer().operator_view().BackendFailure();
  ASSERT_TRUE(failure.has_value());
  EXPECT_THAT(*failure, HasSubstr("apply of worker w1"));
  EXPECT_THAT(*failure, HasSubstr("writer copy inconsistent; recreate"));
  ExpectEveryName(s, kNotServing);
  EXPECT_FALSE(s.health().serving());
  EXPECT_EQ(s.health().reason(), failure);

  // Reads are served from what the backend holds.
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kWaitBound);
  MatchExternalKvPrefixResponse resp;
  ASSERT_TRUE(
      s.stub()
          .MatchExternalKvPrefix(&context, PrefixRequest({1, 2, 3}), &resp)
          .ok());
  EXPECT_EQ(resp.best_prefix_blocks(), 3u);

  // Final: the backend recovering later does not bring SERVING back, and
  // the first failure stays the one reported.
  s.backend().Heal();
  EXPECT_TRUE(Apply(s, Batch("w2").Report(1, {9})).ok());
  ExpectEveryName(s, kNotServing);
  EXPECT_EQ(s.indexer().operator_view().BackendFailure(), failure);
}

TEST(HealthServiceTest, InternalFromARemovalTurnsNotServing) {
  HealthServer s;
  ASSERT_TRUE(s.started());
  ASSERT_TRUE(Apply(s, Batch("w1").Report(1, {1})).ok());
  s.backend().FailMutationsWith(
      MakeBackendStatus(BackendCode::kInternal, "holdings log mismatch"));
  EXPECT_EQ(s.indexer()
                .operator_view()
                .RemoveWorker("w1", RemovalReason::kAdmin)
                .code(),
            absl::StatusCode::kInternal);
  const std::optional<std::string> failure =
      s.indexer().operator_view().BackendFailure();
  ASSERT_TRUE(failure.has_value());
  EXPECT_THAT(*failure, HasSubstr("remove_worker of worker w1"));
  EXPECT_THAT(*failure, HasSubstr("holdings log mismatch"));
  ExpectEveryName(s, kNotServing);
}

TEST(HealthServiceTest, OtherFailuresKeepServing) {
  HealthServer s;
  ASSERT_TRUE(s.started());
  for (BackendCode code :
       {BackendCode::kResourceExhausted, BackendCode::kInvalidArgument,
        BackendCode::kUnavailable, BackendCode::kFailedPrecondition}) {
    s.backend().FailMutationsWith(MakeBackendStatus(code, "transient"));
    EXPECT_FALSE(Apply(s, Batch("w1").Report(1, {1})).ok());
  }
  EXPECT_EQ(s.indexer().operator_view().BackendFailure(), std::nullopt);
  ExpectEveryName(s, kServing);
}

TEST(HealthServiceTest, ShutdownTurnsNotServingWhileTheServerStillAnswers) {
  HealthServer s;
  ASSERT_TRUE(s.started());
  s.health().ShuttingDown();
  ExpectEveryName(s, kNotServing);
  EXPECT_EQ(s.health().reason(), "shutting down");
  // A failure after that touches no health service (ShuttingDown let go of
  // it): nothing to see but no crash.
  s.backend().FailMutationsWith(MakeBackendStatus(BackendCode::kInternal, "x"));
  EXPECT_FALSE(Apply(s, Batch("w1").Report(1, {1})).ok());
  ExpectEveryName(s, kNotServing);
}

// ServingHealth's decisions, through a recording health service.
class RecordingHealthService final : public grpc::HealthCheckServiceInterface {
 public:
  void SetServingStatus(const std::string& name, bool serving) override {
    std::lock_guard<std::mutex> lock(mu_);
    status_[name] = serving;
  }
  void SetServingStatus(bool serving) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [name, s] : status_) s = serving;
  }
  void Shutdown() override {
    std::lock_guard<std::mutex> lock(mu_);
    shut_down_ = true;
  }
  std::map<std::string, bool> status() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }
  bool shut_down() {
    std::lock_guard<std::mutex> lock(mu_);
    return shut_down_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, bool> status_;
  bool shut_down_ = false;
};

TEST(ServingHealthTest, NotServingUntilListeningAndAfterAFailure) {
  RecordingHealthService service;
  ServingHealth health(&service, {"", "a.B"});
  // Published at once: gRPC's own service starts "" as SERVING.
  EXPECT_EQ(service.status(),
            (std::map<std::string, bool>{{"", false}, {"a.B", false}}));
  health.BackendFailed("apply of worker w failed: boom");
  health.Listening();
  EXPECT_EQ(service.status(),
            (std::map<std::string, bool>{{"", false}, {"a.B", false}}));
  EXPECT_EQ(health.reason(), "apply of worker w failed: boom");
  health.ShuttingDown();
  EXPECT_TRUE(service.shut_down());
}

TEST(ServingHealthTest, ACallbackSetAfterTheFailureFiresAtOnce) {
  ModelBackend model;
  MutationFailingBackend backend(&model);
  Indexer indexer(&backend);
  backend.FailMutationsWith(MakeBackendStatus(BackendCode::kInternal, "gone"));
  v1::ApplyExternalKvBatchResponse resp;
  EXPECT_FALSE(indexer.operations()
                   .Apply(Batch("w1").Report(1, {1}), &resp)
                   .Wait()
                   .ok());
  RecordingHealthService service;
  ServingHealth health(&service, {""});
  health.Listening();
  EXPECT_TRUE(health.serving());
  indexer.operator_view().SetBackendFailureCallback(
      [&health](const std::string& failure) { health.BackendFailed(failure); });
  EXPECT_FALSE(health.serving());
  EXPECT_EQ(service.status(), (std::map<std::string, bool>{{"", false}}));
  indexer.operator_view().SetBackendFailureCallback(nullptr);
}

// ---------------------------------------------------------------------------
// Failure log lines

// The captured lines at `level` that contain `text`.
std::vector<std::string> LinesWith(const durable::TestLogCapture& log,
                                   spdlog::level::level_enum level,
                                   std::string_view text) {
  std::vector<std::string> out;
  for (std::string& line : log.Lines(level)) {
    if (line.find(text) != std::string::npos) out.push_back(std::move(line));
  }
  return out;
}

TEST(BackendFailureLogTest, LinesCarryWorkerCodeAndMessageAndAreThrottled) {
  durable::TestLogCapture log;
  FakeMonotonicClock clock;
  ModelBackend model;
  MutationFailingBackend backend(&model);
  Indexer indexer(&backend, nullptr, RequestLimits{}, kBackendAbiMinor, &clock);
  backend.FailMutationsWith(MakeBackendStatus(BackendCode::kResourceExhausted,
                                              "out of memory in the test"));
  v1::ApplyExternalKvBatchResponse resp;
  constexpr int kFlood = 1000;
  for (int i = 0; i < kFlood; ++i) {
    ASSERT_FALSE(indexer.operations()
                     .Apply(Batch("w1").Report(1, {i}), &resp)
                     .Wait()
                     .ok());
  }
  std::vector<std::string> lines =
      LinesWith(log, spdlog::level::warn, kBackendMutationFailedLogMessage);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "backend mutation failed op=apply worker=w1 "
            "code=RESOURCE_EXHAUSTED error=out of memory in the test");

  // One more line per interval, counting what was left out.
  clock.Advance(kBackendFailureLogInterval);
  ASSERT_FALSE(indexer.operations()
                   .Apply(Batch("w2").Report(1, {1}), &resp)
                   .Wait()
                   .ok());
  lines = LinesWith(log, spdlog::level::warn, kBackendMutationFailedLogMessage);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1],
            "backend mutation failed op=apply worker=w2 "
            "code=RESOURCE_EXHAUSTED suppressed_since_last_line=999 "
            "error=out of memory in the test");
  EXPECT_EQ(indexer.operator_view().BackendFailure(), std::nullopt);

  // The failure that breaks the backend is logged at once, at ERROR, even
  // inside the interval; the flood after it is throttled again.
  backend.FailMutationsWith(
      MakeBackendStatus(BackendCode::kInternal, "poisoned"));
  for (int i = 0; i < kFlood; ++i) {
    ASSERT_FALSE(indexer.operations()
                     .Apply(Batch("w3").Report(1, {i}), &resp)
                     .Wait()
                     .ok());
  }
  const std::vector<std::string> errors = log.Lines(spdlog::level::err);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], HasSubstr(kBackendCannotContinueLogMessage));
  EXPECT_THAT(errors[0],
              HasSubstr("op=apply worker=w3 code=INTERNAL error=poisoned"));
  EXPECT_EQ(log.Lines(spdlog::level::warn).size(), 2u);
}

TEST(BackendFailureLogTest, ARemovalFailureIsNotLoggedTwice) {
  durable::TestLogCapture log;
  ModelBackend model;
  MutationFailingBackend backend(&model);
  Indexer indexer(&backend);
  v1::ApplyExternalKvBatchResponse resp;
  ASSERT_TRUE(indexer.operations()
                  .Apply(Batch("w1").Report(1, {1}), &resp)
                  .Wait()
                  .ok());
  backend.FailMutationsWith(
      MakeBackendStatus(BackendCode::kResourceExhausted, "no memory"));
  EXPECT_FALSE(
      indexer.operator_view().RemoveWorker("w1", RemovalReason::kAdmin).ok());
  // The removal's own line (core/worker_lifecycle_log.h), and only it.
  const std::vector<std::string> errors = log.Lines(spdlog::level::err);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], HasSubstr("worker=w1"));
  EXPECT_THAT(errors[0], HasSubstr("no memory"));
  EXPECT_TRUE(
      LinesWith(log, spdlog::level::warn, kBackendMutationFailedLogMessage)
          .empty());
}

// ---------------------------------------------------------------------------
// Reflection

TEST(ReflectionTest, ListsTheServices) {
  HealthServer s;
  ASSERT_TRUE(s.started());
  const std::optional<std::vector<std::string>> names =
      test_support::ReflectedServices(s.channel(), kWaitBound);
  ASSERT_TRUE(names.has_value());
  EXPECT_THAT(*names, ::testing::IsSupersetOf(
                          {"kv_indexer.v1.KVIndexer", "grpc.health.v1.Health",
                           "grpc.reflection.v1alpha.ServerReflection"}));
}

// KV_INDEXER_GRPC_REFLECTION=off: the reflection service is not there (the
// call fails: UNIMPLEMENTED), the health service is.
TEST(ReflectionTest, CanBeLeftOut) {
  HealthServer s(/*clock=*/nullptr, /*reflection=*/false);
  ASSERT_TRUE(s.started());
  EXPECT_EQ(test_support::ReflectedServices(s.channel(), kWaitBound),
            std::nullopt);
  EXPECT_EQ(s.Check("").status, kServing);
  // Other servers of the process keep it.
  HealthServer with;
  ASSERT_TRUE(with.started());
  EXPECT_TRUE(
      test_support::ReflectedServices(with.channel(), kWaitBound).has_value());
}

TEST(ReflectionTest, DescribesKvIndexer) {
  HealthServer s;
  ASSERT_TRUE(s.started());
  // ServerReflectionRequest.file_containing_symbol (4).
  const std::optional<std::string> response = test_support::ReflectOnce(
      s.channel(),
      test_support::LengthDelimitedField(4, "kv_indexer.v1.KVIndexer"),
      kWaitBound);
  ASSERT_TRUE(response.has_value());
  // .file_descriptor_response (4): FileDescriptorResponse
  // .file_descriptor_proto (1), serialised FileDescriptorProtos.
  const std::vector<std::string> found =
      test_support::LengthDelimitedFields(*response, 4);
  ASSERT_EQ(found.size(), 1u) << "no file_descriptor_response";
  bool described = false;
  for (const std::string& bytes :
       test_support::LengthDelimitedFields(found[0], 1)) {
    google::protobuf::FileDescriptorProto file;
    ASSERT_TRUE(file.ParseFromString(bytes));
    if (file.package() != "kv_indexer.v1") continue;
    for (const auto& service : file.service()) {
      if (service.name() != "KVIndexer") continue;
      described = true;
      std::vector<std::string> methods;
      for (const auto& method : service.method()) {
        methods.push_back(method.name());
      }
      EXPECT_THAT(methods, ::testing::Contains("MatchExternalKvPrefix"));
    }
  }
  EXPECT_TRUE(described);
}

}  // namespace health_service_test
}  // namespace kvindexer
