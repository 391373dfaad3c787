// A replica of the fleet event log in process (KV_INDEXER_EVENT_SOURCE=
// jetstream; docs/fleet.md, "Replicas follow the log"): kv_indexer.v1 and
// the admin service wired as kv-indexer-server wires them for a replica,
// over a PausableEventLog followed by a replica::LogFollower. The mutations are
// refused with FAILED_PRECONDITION naming the variable, after the write
// token; the reads answer what the log put in the index; grpc.health.v1
// is NOT_SERVING until the replica has caught up and while it lags.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/metrics_registry.h"
#include "common/prometheus_text.h"
#include "core/indexer.h"
#include "fleet/memory_event_log.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "kvindexer_admin.grpc.pb.h"
#include "kvindexer_fleet.pb.h"
#include "replica/log_follower.h"
#include "server/admin_service.h"
#include "server/kv_indexer_service.h"
#include "server/server_metrics.h"
#include "server/serving_health.h"
#include "server/transport_settings.h"
#include "server/write_authorizer.h"
#include "tests/support/grpc_probes.h"
#include "tests/support/model_backend.h"
#include "tests/support/pausable_event_log.h"
#include "tests/support/requests.h"
#include "tests/support/wait_until.h"

namespace kvindexer {
// Named rather than anonymous: unity builds merge anonymous namespaces.
namespace replica_service_test {

using namespace std::chrono_literals;
using ::kvindexer::test_support::WaitUntil;
namespace v1 = ::kv_indexer::v1;
using test_support::Batch;
using test_support::ModelBackend;
using ::testing::HasSubstr;

constexpr auto kWaitBound = 10s;
constexpr char kToken[] = "tok-replica-5b1e0c";
const std::string kBearer = std::string("Bearer ") + kToken;

constexpr uint64_t kServing = test_support::kHealthServing;
constexpr uint64_t kNotServing = test_support::kHealthNotServing;

std::string ApplyPayload(const v1::ApplyExternalKvBatchRequest& request) {
  ::kvindexer::fleet::v1::LogRecord record;
  *record.mutable_apply() = request;
  record.set_producer("bridge-a");
  return record.SerializeAsString();
}

class ReplicaServer {
 public:
  // `token`: the write token required of mutations; empty for none.
  ReplicaServer(std::string token, uint64_t max_lag_records)
      : authorizer_(token.empty() ? WriteAuthorizer()
                                  : WriteAuthorizer(std::move(token))),
        service_(indexer_.operations(), 8, WallClock::Real(),
                 /*rejection_log=*/nullptr,
                 /*read_heartbeats=*/true, &authorizer_),
        admin_(Sources()),
        follower_(log_, indexer_,
                  replica::LogFollowerOptions{
                      .read_wait = 20ms,
                      .max_lag_records = max_lag_records,
                      .retry_initial = 1ms,
                      .retry_cap = 10ms,
                      .on_readiness =
                          [this](std::optional<std::string> behind) {
                            health_->LogFollowing(std::move(behind));
                          },
                      .reload = nullptr,
                  }) {
    // As the server does it for KV_INDEXER_EVENT_SOURCE=jetstream
    // (server/server_wiring.cc, server/replica_start.cc).
    service_.FollowLog();
    EnableHealthAndReflection();
    grpc::ServerBuilder builder;
    ApplyTransportSettings(builder);
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&service_);
    builder.RegisterService(&admin_);
    server_ = builder.BuildAndStart();
    if (server_ == nullptr) return;
    health_ = std::make_unique<ServingHealth>(server_->GetHealthCheckService(),
                                              HealthServiceNames());
    health_->LogFollowing(follower_.NotReadyReason());
    health_->Listening();
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                   grpc::InsecureChannelCredentials());
    kv_ = v1::KVIndexer::NewStub(channel_);
    admin_stub_ = admin_v1::KvIndexerAdmin::NewStub(channel_);
  }
  ~ReplicaServer() {
    follower_.Stop();  // before the health it reports to
    if (server_ == nullptr) return;
    health_->ShuttingDown();
    server_->Shutdown(std::chrono::system_clock::now());
  }

  bool started() const { return server_ != nullptr && port_ != 0; }
  void StartFollowing() { follower_.Start(); }
  PausableEventLog& log() { return log_; }
  replica::LogFollower& follower() { return follower_; }
  ServingHealth& health() { return *health_; }
  v1::KVIndexer::Stub& kv() { return *kv_; }
  admin_v1::KvIndexerAdmin::Stub& admin() { return *admin_stub_; }

  uint64_t Append(const v1::ApplyExternalKvBatchRequest& request) {
    auto ack = log_.Append(request.worker_id(), ApplyPayload(request), "",
                           std::nullopt);
    EXPECT_TRUE(ack.ok()) << ack.status();
    return ack.ok() ? ack->position : 0;
  }
  // The status every health name reports, when they all agree.
  std::optional<uint64_t> Health() {
    std::optional<uint64_t> agreed;
    for (const std::string& name : HealthServiceNames()) {
      const test_support::HealthAnswer answer =
          test_support::CheckHealth(channel_, name, kWaitBound);
      if (answer.code != grpc::StatusCode::OK) return std::nullopt;
      if (agreed.has_value() && *agreed != answer.status) return std::nullopt;
      agreed = answer.status;
    }
    return agreed;
  }

 private:
  AdminSources Sources() {
    AdminSources s;
    s.indexer = &indexer_.operator_view();
    s.backend_name = "model";
    s.admission = &service_.admission();
    s.prefix_query_max_inflight = 8;
    s.authorizer = authorizer_.enabled() ? &authorizer_ : nullptr;
    s.follows_log = true;
    s.max_worker_id_bytes = RequestLimits{}.max_worker_id_bytes;
    return s;
  }

  PausableEventLog log_;
  ModelBackend backend_;
  Indexer indexer_{&backend_};
  WriteAuthorizer authorizer_;
  KvIndexerService service_;
  AdminService admin_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<ServingHealth> health_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::KVIndexer::Stub> kv_;
  std::unique_ptr<admin_v1::KvIndexerAdmin::Stub> admin_stub_;
  replica::LogFollower follower_;
};

std::unique_ptr<grpc::ClientContext> Context(const char* authorization) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + kWaitBound);
  if (authorization != nullptr) {
    context->AddMetadata("authorization", authorization);
  }
  return context;
}

// The four mutations' answers, each with `authorization` (null: none).
struct MutationAnswers {
  grpc::Status apply, replace, configure, remove;
};

MutationAnswers Mutate(ReplicaServer& s, const char* authorization) {
  MutationAnswers out;
  v1::ApplyExternalKvBatchResponse apply;
  out.apply = s.kv().ApplyExternalKvBatch(
      Context(authorization).get(),
      Batch("w9", "10.0.0.9:1").Report(kTierHbm, {90}), &apply);
  v1::ReplaceExternalKvSnapshotRequest replace_req;
  replace_req.set_worker_id("w9");
  v1::ReplaceExternalKvSnapshotResponse replace;
  out.replace = s.kv().ReplaceExternalKvSnapshot(Context(authorization).get(),
                                                 replace_req, &replace);
  v1::ConfigureExpectedWorkersResponse configure;
  out.configure = s.kv().ConfigureExpectedWorkers(
      Context(authorization).get(), v1::ConfigureExpectedWorkersRequest{},
      &configure);
  admin_v1::RemoveWorkerRequest remove_req;
  remove_req.set_worker_id("w1");
  remove_req.set_reason("test");
  admin_v1::RemoveWorkerResponse remove;
  out.remove =
      s.admin().RemoveWorker(Context(authorization).get(), remove_req, &remove);
  return out;
}

void ExpectAll(const MutationAnswers& answers, grpc::StatusCode code) {
  for (const auto& [name, status] :
       {std::pair{"ApplyExternalKvBatch", answers.apply},
        std::pair{"ReplaceExternalKvSnapshot", answers.replace},
        std::pair{"ConfigureExpectedWorkers", answers.configure},
        std::pair{"RemoveWorker", answers.remove}}) {
    EXPECT_EQ(status.error_code(), code)
        << name << ": " << status.error_message();
    if (code == grpc::StatusCode::FAILED_PRECONDITION) {
      EXPECT_THAT(status.error_message(),
                  HasSubstr("KV_INDEXER_EVENT_SOURCE=jetstream"))
          << name;
      EXPECT_THAT(status.error_message(), HasSubstr(name));
    }
  }
}

TEST(ReplicaServiceTest, MutationsAreRefusedAndReadsAnswerFromTheLog) {
  ReplicaServer s("", /*max_lag_records=*/100);
  ASSERT_TRUE(s.started());
  const uint64_t last =
      s.Append(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {1, 2, 3}));
  s.StartFollowing();
  ASSERT_TRUE(WaitUntil([&] { return s.follower().applied_position() >= last; },
                        kWaitBound, 1ms));

  ExpectAll(Mutate(s, nullptr), grpc::StatusCode::FAILED_PRECONDITION);
  // Nothing of the refused calls reached the index.
  {
    v1::MatchExternalKvResponse resp;
    ASSERT_TRUE(s.kv()
                    .MatchExternalKv(Context(nullptr).get(),
                                     test_support::MatchRequest({90}), &resp)
                    .ok());
    EXPECT_EQ(resp.matches_size(), 0);
  }

  // Reads answer what the log put there.
  v1::MatchExternalKvResponse match;
  ASSERT_TRUE(s.kv()
                  .MatchExternalKv(Context(nullptr).get(),
                                   test_support::MatchRequest({2}), &match)
                  .ok());
  ASSERT_EQ(match.matches_size(), 1);
  EXPECT_EQ(match.matches(0).worker_id(), "w1");
  v1::MatchExternalKvPrefixResponse prefix;
  EXPECT_TRUE(s.kv()
                  .MatchExternalKvPrefix(Context(nullptr).get(),
                                         test_support::PrefixRequest({1, 2, 3}),
                                         &prefix)
                  .ok());
  v1::GetExternalKvHitCountsResponse hits;
  EXPECT_TRUE(s.kv()
                  .GetExternalKvHitCounts(Context(nullptr).get(),
                                          test_support::HitCountsRequest({1}),
                                          &hits)
                  .ok());
  admin_v1::ListWorkersResponse workers;
  ASSERT_TRUE(s.admin()
                  .ListWorkers(Context(nullptr).get(),
                               admin_v1::ListWorkersRequest{}, &workers)
                  .ok());
  ASSERT_EQ(workers.workers_size(), 1);
  EXPECT_EQ(workers.workers(0).worker_id(), "w1");
  admin_v1::GetStatsResponse stats;
  EXPECT_TRUE(
      s.admin()
          .GetStats(Context(nullptr).get(), admin_v1::GetStatsRequest{}, &stats)
          .ok());
}

TEST(ReplicaServiceTest, TheWriteTokenIsCheckedFirst) {
  ReplicaServer s(kToken, /*max_lag_records=*/100);
  ASSERT_TRUE(s.started());
  ExpectAll(Mutate(s, nullptr), grpc::StatusCode::UNAUTHENTICATED);
  ExpectAll(Mutate(s, "Bearer tok-wrong"), grpc::StatusCode::PERMISSION_DENIED);
  ExpectAll(Mutate(s, kBearer.c_str()), grpc::StatusCode::FAILED_PRECONDITION);
}

TEST(ReplicaServiceTest, NotServingUntilCaughtUpAndWhileLagging) {
  ReplicaServer s("", /*max_lag_records=*/2);
  ASSERT_TRUE(s.started());
  for (int64_t i = 1; i <= 3; ++i) {
    s.Append(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {i}));
  }
  // Before the follower has read the log: NOT_SERVING, reads answered.
  EXPECT_EQ(s.Health(), kNotServing);
  ASSERT_TRUE(s.health().reason().has_value());
  EXPECT_THAT(*s.health().reason(), HasSubstr("catching up"));
  // Reads paused: the follower sees the log's end but cannot reach it.
  s.log().PauseReads(true);
  s.StartFollowing();
  ASSERT_TRUE(
      WaitUntil([&] { return s.log().paused_reads() >= 2; }, kWaitBound, 1ms));
  EXPECT_EQ(s.Health(), kNotServing);

  s.log().PauseReads(false);
  ASSERT_TRUE(
      WaitUntil([&] { return s.Health() == kServing; }, kWaitBound, 1ms));
  EXPECT_EQ(s.follower().applied_position(), 3u);
  EXPECT_FALSE(s.health().reason().has_value());

  // Falls behind by more than 2 records: NOT_SERVING until it catches up.
  s.log().PauseReads(true);
  const uint64_t paused = s.log().paused_reads();
  ASSERT_TRUE(WaitUntil([&] { return s.log().paused_reads() > paused; },
                        kWaitBound, 1ms));
  for (int64_t i = 4; i <= 6; ++i) {
    s.Append(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {i}));
  }
  ASSERT_TRUE(
      WaitUntil([&] { return s.Health() == kNotServing; }, kWaitBound, 1ms));
  ASSERT_TRUE(s.health().reason().has_value());
  EXPECT_THAT(*s.health().reason(), HasSubstr("by 3 records"));
  s.log().PauseReads(false);
  ASSERT_TRUE(
      WaitUntil([&] { return s.Health() == kServing; }, kWaitBound, 1ms));
  EXPECT_EQ(s.follower().applied_position(), 6u);
}

TEST(ReplicaServiceTest, LogFollowingIsNotFinalButShutdownIs) {
  ServingHealth health(nullptr, HealthServiceNames());
  health.Listening();
  EXPECT_TRUE(health.serving());
  health.LogFollowing("catching up");
  EXPECT_FALSE(health.serving());
  EXPECT_EQ(health.reason(), "catching up");
  health.LogFollowing(std::nullopt);
  EXPECT_TRUE(health.serving());
  health.ShuttingDown();
  health.LogFollowing(std::nullopt);
  EXPECT_FALSE(health.serving());
  EXPECT_EQ(health.reason(), "shutting down");
}

TEST(ReplicaServiceTest, MetricsShowPositionLagAndRecords) {
  fleet::MemoryEventLog log;
  ModelBackend backend;
  Indexer indexer(&backend);
  KvIndexerService service(indexer.operations(), 8, WallClock::Real());
  MetricsRegistry registry;
  ServerMetrics metrics(registry, indexer.operator_view(), service);
  const auto append = [&](const std::string& worker,
                          const std::string& payload) {
    ASSERT_TRUE(log.Append(worker, payload, "", std::nullopt).ok());
  };
  // 1, 2: trimmed; 3: applied; 4: undecodable; 5: refused (a gated apply
  // before any snapshot install); 6: applied.
  append("w0", ApplyPayload(Batch("w0", "10.0.0.9:1")));
  append("w0", ApplyPayload(Batch("w0", "10.0.0.9:1")));
  append("w1", ApplyPayload(Batch("w1", "10.0.0.1:1")));
  append("w1", "\xff\xff\xff");
  append("w1",
         ApplyPayload(
             Batch("w1", "10.0.0.1:1").Gated("e", 1).Report(kTierHbm, {1})));
  append("w2", ApplyPayload(Batch("w2", "10.0.0.2:1")));
  ASSERT_TRUE(log.TrimBefore(3).ok());

  {
    const std::string text = RenderPrometheusText(registry.Collect());
    EXPECT_THAT(text, ::testing::Not(HasSubstr("kvindexer_fleet_")));
  }
  replica::LogFollowerOptions options;
  options.read_wait = 20ms;
  replica::LogFollower follower(log, indexer, std::move(options));
  metrics.SetLogFollower(&follower);
  follower.Start();
  ASSERT_TRUE(WaitUntil([&] { return follower.caught_up(); }, kWaitBound, 1ms));
  ASSERT_EQ(follower.applied_position(), 6u);
  const std::string text = RenderPrometheusText(registry.Collect());
  metrics.SetLogFollower(nullptr);
  follower.Stop();
  EXPECT_THAT(text, HasSubstr("kvindexer_fleet_applied_position 6\n"));
  EXPECT_THAT(text, HasSubstr("kvindexer_fleet_lag_records 0\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE kvindexer_fleet_records_total counter"));
  EXPECT_THAT(
      text, HasSubstr("kvindexer_fleet_records_total{result=\"applied\"} 2\n"));
  EXPECT_THAT(
      text, HasSubstr("kvindexer_fleet_records_total{result=\"refused\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("kvindexer_fleet_records_total{result=\"undecodable\"} "
                        "1\n"));
  EXPECT_THAT(
      text, HasSubstr("kvindexer_fleet_records_total{result=\"trimmed\"} 2\n"));
}

}  // namespace replica_service_test
}  // namespace kvindexer
