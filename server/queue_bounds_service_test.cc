// The bounded work queues and ExplainPrefix's admission over the wire
// (server/queue_config.h, server/queue_refusal.h, server/admin_service.h):
// an in-process server on 127.0.0.1 whose backend can hold a call inside it,
// so that a queue fills deterministically: the held call occupies the
// executor's thread, the next calls wait in its queue, and one more is
// refused with RESOURCE_EXHAUSTED at once, having changed nothing, and is
// counted in the Prometheus counters.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/metrics_registry.h"
#include "common/prometheus_text.h"
#include "core/indexer.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "kvindexer_admin.grpc.pb.h"
#include "server/admin_service.h"
#include "server/kv_indexer_service.h"
#include "server/server_metrics.h"
#include "tests/support/in_process_server.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"

namespace kvindexer::queue_bounds_test {
namespace {

namespace v1 = ::kv_indexer::v1;
using namespace std::chrono_literals;
using test_support::Batch;
using test_support::MatchRequest;
using test_support::ModelBackend;
using test_support::ScrapedValue;
using ::testing::HasSubstr;

// Bound on every wait in this file; nothing sleeps to synchronise.
constexpr auto kWaitBound = 10s;

// A ModelBackend whose Apply, Match and GetStats can be held at their
// entry until opened again, and which counts the calls that entered.
class GatedBackend final : public IndexBackend {
 public:
  enum Gate { kApply, kMatch, kStats, kGateCount };

  void Close(Gate gate) {
    std::lock_guard<std::mutex> lock(mu_);
    closed_[gate] = true;
  }
  void OpenAll() {
    std::lock_guard<std::mutex> lock(mu_);
    for (bool& closed : closed_) closed = false;
    cv_.notify_all();
  }
  // Waits until `n` calls have entered through `gate`.
  bool WaitForEntries(Gate gate, int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWaitBound, [&] { return entries_[gate] >= n; });
  }
  int entries(Gate gate) {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_[gate];
  }
  // The model behind the gates. Read only while no call is in progress.
  ModelBackend& model() { return model_; }

  BackendStatus Apply(const ApplyBatchView& batch) noexcept override {
    Pass(kApply);
    return model_.Apply(batch);
  }
  BackendStatus Match(HashSpan hashes, bool count_as_hit,
                      BlockVisitor* visitor) noexcept override {
    Pass(kMatch);
    return model_.Match(hashes, count_as_hit, visitor);
  }
  BackendStatus PrefixScan(HashSpan hashes,
                           BlockVisitor* visitor) noexcept override {
    return model_.PrefixScan(hashes, visitor);
  }
  BackendStatus HitCounts(HashSpan hashes, uint64_t* counts) noexcept override {
    return model_.HitCounts(hashes, counts);
  }
  void GetStats(BackendStats* stats) noexcept override {
    Pass(kStats);
    model_.GetStats(stats);
  }
  BackendStatus RemoveWorker(StringView worker_id,
                             uint32_t* existed) noexcept override {
    return model_.RemoveWorker(worker_id, existed);
  }
  BackendStatus CountPlacements(StringView worker_id, uint64_t* counts,
                                uint32_t* existed) noexcept override {
    return model_.CountPlacements(worker_id, counts, existed);
  }

 private:
  // Counts the entry, then waits while `gate` is closed (bounded, so that
  // a broken test cannot hang).
  void Pass(Gate gate) {
    std::unique_lock<std::mutex> lock(mu_);
    ++entries_[gate];
    cv_.notify_all();
    cv_.wait_for(lock, kWaitBound, [&] { return !closed_[gate]; });
  }

  ModelBackend model_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_[kGateCount] = {};
  int entries_[kGateCount] = {};
};

// The KVIndexer and admin services on one port, with their metrics.
class BoundedServer {
 public:
  BoundedServer(const QueueLimits& queues)
      : indexer_(&backend_),
        service_(indexer_.operations(), 8, WallClock::Real(),
                 /*rejection_log=*/nullptr, /*read_heartbeats=*/true,
                 /*write_authorizer=*/nullptr, queues),
        metrics_(registry_, indexer_.operator_view(), service_),
        admin_(Sources(queues.admin)),
        server_(service_, admin_, std::chrono::milliseconds(0)) {}
  // Calls held in the backend go on, so that the server can shut down.
  ~BoundedServer() { backend_.OpenAll(); }

  bool started() const { return server_.started(); }
  GatedBackend& backend() { return backend_; }
  AdminSources Sources(uint32_t admin_queue_max) {
    AdminSources sources;
    sources.indexer = &indexer_.operator_view();
    sources.queue_max = admin_queue_max;
    sources.max_worker_id_bytes = RequestLimits{}.max_worker_id_bytes;
    sources.metrics = metrics_.rpc();
    sources.queue_rejections = metrics_.admin_queue_rejections();
    sources.explain_rejections = metrics_.explain_rejections();
    return sources;
  }
  KvIndexerService& service() { return service_; }
  AdminService& admin() { return admin_; }
  v1::KVIndexer::Stub& kv() { return server_.kv(); }
  admin_v1::KvIndexerAdmin::Stub& admin_stub() { return server_.admin(); }
  // The value of one series of /metrics now.
  std::optional<double> Metric(std::string_view series) {
    const std::vector<MetricFamily> families = registry_.Collect();
    return ScrapedValue(RenderPrometheusText(families), series);
  }

 private:
  GatedBackend backend_;
  Indexer indexer_;
  KvIndexerService service_;
  MetricsRegistry registry_;
  ServerMetrics metrics_;
  AdminService admin_;
  test_support::InProcessServer server_;
};

// One call in flight through a stub's callback API.
template <typename Response>
struct InFlight {
  grpc::ClientContext context;
  Response response;
  std::promise<grpc::Status> done;
  std::future<grpc::Status> result = done.get_future();

  InFlight() {
    context.set_deadline(std::chrono::system_clock::now() + 2 * kWaitBound);
  }
  std::function<void(grpc::Status)> Callback() {
    return [this](grpc::Status s) { done.set_value(std::move(s)); };
  }
  // The status once the call has ended; DEADLINE_EXCEEDED if it did not
  // within the bound.
  grpc::Status Wait() {
    if (result.wait_for(2 * kWaitBound) != std::future_status::ready) {
      context.TryCancel();
    }
    return result.get();
  }
};

std::unique_ptr<InFlight<v1::ApplyExternalKvBatchResponse>> StartApply(
    BoundedServer& server, const v1::ApplyExternalKvBatchRequest& request) {
  auto call = std::make_unique<InFlight<v1::ApplyExternalKvBatchResponse>>();
  server.kv().async()->ApplyExternalKvBatch(&call->context, &request,
                                            &call->response, call->Callback());
  return call;
}

std::unique_ptr<InFlight<admin_v1::GetStatsResponse>> StartGetStats(
    BoundedServer& server) {
  static const admin_v1::GetStatsRequest kRequest;
  auto call = std::make_unique<InFlight<admin_v1::GetStatsResponse>>();
  server.admin_stub().async()->GetStats(&call->context, &kRequest,
                                        &call->response, call->Callback());
  return call;
}

// Waits until `depth()` reports `n`.
template <typename Depth>
bool WaitForDepth(Depth depth, size_t n) {
  const auto until = std::chrono::steady_clock::now() + kWaitBound;
  while (depth() != n) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

grpc::Status SyncApply(BoundedServer& server,
                       const v1::ApplyExternalKvBatchRequest& request) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kWaitBound);
  v1::ApplyExternalKvBatchResponse response;
  return server.kv().ApplyExternalKvBatch(&context, request, &response);
}

// The workers MatchExternalKv reports holding `hash`.
int PlacementsOf(BoundedServer& server, int64_t hash) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kWaitBound);
  v1::MatchExternalKvResponse response;
  const grpc::Status s =
      server.kv().MatchExternalKv(&context, MatchRequest({hash}), &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return response.matches_size();
}

// A full apply queue refuses the next mutation at once with
// RESOURCE_EXHAUSTED naming the queue and its variable; the refused
// mutation never reaches the index, the accepted ones all do, and
// kvindexer_queue_rejections_total{queue="apply"} counts the refusal.
TEST(QueueBoundsServiceTest, AFullApplyQueueRefusesAndChangesNothing) {
  BoundedServer server(QueueLimits{.apply = 2});
  ASSERT_TRUE(server.started());
  GatedBackend& backend = server.backend();
  backend.Close(GatedBackend::kApply);

  // The first apply holds the apply thread inside the backend; the next
  // two fill the queue.
  const v1::ApplyExternalKvBatchRequest accepted[] = {
      Batch("w1", "10.0.0.1:1").Report(kTierHbm, {1}),
      Batch("w2", "10.0.0.2:1").Report(kTierHbm, {2}),
      Batch("w3", "10.0.0.3:1").Report(kTierHbm, {3})};
  std::vector<std::unique_ptr<InFlight<v1::ApplyExternalKvBatchResponse>>>
      calls;
  calls.push_back(StartApply(server, accepted[0]));
  ASSERT_TRUE(backend.WaitForEntries(GatedBackend::kApply, 1));
  // One at a time: the queue then holds them in this order.
  calls.push_back(StartApply(server, accepted[1]));
  ASSERT_TRUE(
      WaitForDepth([&] { return server.service().apply_queue_depth(); }, 1));
  calls.push_back(StartApply(server, accepted[2]));
  ASSERT_TRUE(
      WaitForDepth([&] { return server.service().apply_queue_depth(); }, 2));

  const grpc::Status refused =
      SyncApply(server, Batch("w4", "10.0.0.4:1").Report(kTierHbm, {4}));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << refused.error_message();
  EXPECT_THAT(refused.error_message(), HasSubstr("apply queue is full"));
  EXPECT_THAT(refused.error_message(),
              HasSubstr("KV_INDEXER_APPLY_QUEUE_MAX=2"));
  EXPECT_EQ(server.service().apply_rejected_total(), 1u);

  backend.OpenAll();
  for (auto& call : calls) {
    const grpc::Status s = call->Wait();
    EXPECT_TRUE(s.ok()) << s.error_message();
  }
  // Scraped once nothing is held (a scrape reads the workers, behind the
  // held apply).
  EXPECT_EQ(server.Metric("kvindexer_queue_rejections_total{queue=\"apply\"}"),
            1.0);
  EXPECT_EQ(server.Metric(
                "kvindexer_grpc_requests_total{method=\"ApplyExternalKvBatch\","
                "code=\"RESOURCE_EXHAUSTED\"}"),
            1.0);
  // Three applies reached the backend; w4 never did.
  EXPECT_EQ(backend.entries(GatedBackend::kApply), 3);
  std::vector<std::string> applied;
  for (const auto& batch : backend.model().applies) {
    applied.push_back(batch.worker_id);
  }
  EXPECT_THAT(applied, ::testing::ElementsAre("w1", "w2", "w3"));
  EXPECT_EQ(PlacementsOf(server, 4), 0);
  EXPECT_EQ(PlacementsOf(server, 3), 1);

  // With room again, the same mutation is accepted.
  EXPECT_TRUE(
      SyncApply(server, Batch("w4", "10.0.0.4:1").Report(kTierHbm, {4})).ok());
}

// The lookup queue: both lookup threads held inside the backend, one call
// waiting, and the next refused at once, naming KV_INDEXER_LOOKUP_QUEUE_MAX.
TEST(QueueBoundsServiceTest, AFullLookupQueueRefuses) {
  BoundedServer server(QueueLimits{.lookup = 1});
  ASSERT_TRUE(server.started());
  GatedBackend& backend = server.backend();
  backend.Close(GatedBackend::kMatch);
  const v1::MatchExternalKvRequest request = MatchRequest({1});
  std::vector<std::unique_ptr<InFlight<v1::MatchExternalKvResponse>>> calls;
  auto start = [&] {
    auto call = std::make_unique<InFlight<v1::MatchExternalKvResponse>>();
    server.kv().async()->MatchExternalKv(&call->context, &request,
                                         &call->response, call->Callback());
    calls.push_back(std::move(call));
  };
  // One at a time, so that each is on a thread before the next arrives
  // (a call that arrives while another waits would find the queue full).
  for (int i = 1; i <= static_cast<int>(kLookupThreads); ++i) {
    start();
    ASSERT_TRUE(backend.WaitForEntries(GatedBackend::kMatch, i));
  }
  start();
  ASSERT_TRUE(
      WaitForDepth([&] { return server.service().lookup_queue_depth(); }, 1));

  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kWaitBound);
  v1::MatchExternalKvResponse response;
  const grpc::Status refused =
      server.kv().MatchExternalKv(&context, request, &response);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(),
              HasSubstr("KV_INDEXER_LOOKUP_QUEUE_MAX=1"));

  backend.OpenAll();
  for (auto& call : calls) EXPECT_TRUE(call->Wait().ok());
  EXPECT_EQ(server.Metric("kvindexer_queue_rejections_total{queue=\"lookup\"}"),
            1.0);
  EXPECT_EQ(backend.entries(GatedBackend::kMatch),
            static_cast<int>(kLookupThreads) + 1);
}

// The admin queue: a GetStats held inside the backend occupies the admin
// thread, two more wait, and the next is refused naming
// KV_INDEXER_ADMIN_QUEUE_MAX; every accepted call is answered.
TEST(QueueBoundsServiceTest, AFullAdminQueueRefuses) {
  BoundedServer server(QueueLimits{.admin = 2});
  ASSERT_TRUE(server.started());
  GatedBackend& backend = server.backend();
  backend.Close(GatedBackend::kStats);
  std::vector<std::unique_ptr<InFlight<admin_v1::GetStatsResponse>>> calls;
  calls.push_back(StartGetStats(server));
  ASSERT_TRUE(backend.WaitForEntries(GatedBackend::kStats, 1));
  calls.push_back(StartGetStats(server));
  calls.push_back(StartGetStats(server));
  ASSERT_TRUE(WaitForDepth([&] { return server.admin().queue_depth(); }, 2));

  auto refused = StartGetStats(server);
  const grpc::Status s = refused->Wait();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("admin queue is full"));
  EXPECT_THAT(s.error_message(), HasSubstr("KV_INDEXER_ADMIN_QUEUE_MAX=2"));

  backend.OpenAll();
  for (auto& call : calls) EXPECT_TRUE(call->Wait().ok());
  EXPECT_EQ(backend.entries(GatedBackend::kStats), 3);
  // (A scrape reads the backend's stats too: after the count above.)
  EXPECT_EQ(server.Metric("kvindexer_queue_rejections_total{queue=\"admin\"}"),
            1.0);
}

// ExplainPrefix takes one of kExplainPrefixMaxInflight permits on the
// callback thread: with the admin thread held and that many explanations
// waiting, the next is refused at once, counted, and a GetStats is still
// queued; once they have run, the permits are back.
TEST(QueueBoundsServiceTest, ExplainPrefixNeedsAPermit) {
  BoundedServer server(QueueLimits{.admin = 16});
  ASSERT_TRUE(server.started());
  GatedBackend& backend = server.backend();
  backend.Close(GatedBackend::kStats);
  auto held = StartGetStats(server);
  ASSERT_TRUE(backend.WaitForEntries(GatedBackend::kStats, 1));

  admin_v1::ExplainPrefixRequest request;
  request.add_hashes(1);
  request.add_hashes(2);
  std::vector<std::unique_ptr<InFlight<admin_v1::ExplainPrefixResponse>>>
      explains;
  auto start = [&] {
    auto call = std::make_unique<InFlight<admin_v1::ExplainPrefixResponse>>();
    server.admin_stub().async()->ExplainPrefix(
        &call->context, &request, &call->response, call->Callback());
    explains.push_back(std::move(call));
  };
  for (uint32_t i = 0; i < kExplainPrefixMaxInflight; ++i) start();
  ASSERT_TRUE(WaitForDepth([&] { return server.admin().queue_depth(); },
                           kExplainPrefixMaxInflight));
  EXPECT_EQ(server.admin().explains_in_flight(), kExplainPrefixMaxInflight);

  start();
  const grpc::Status refused = explains.back()->Wait();
  explains.pop_back();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(), HasSubstr("ExplainPrefix"));
  // Other admin calls still queue behind the held one.
  auto stats = StartGetStats(server);
  ASSERT_TRUE(WaitForDepth([&] { return server.admin().queue_depth(); },
                           kExplainPrefixMaxInflight + 1));

  backend.OpenAll();
  EXPECT_TRUE(held->Wait().ok());
  for (auto& call : explains) EXPECT_TRUE(call->Wait().ok());
  EXPECT_TRUE(stats->Wait().ok());
  EXPECT_EQ(server.admin().explains_in_flight(), 0u);
  EXPECT_EQ(server.Metric("kvindexer_admin_explain_rejections_total"), 1.0);
  start();
  EXPECT_TRUE(explains.back()->Wait().ok());
}

}  // namespace
}  // namespace kvindexer::queue_bounds_test
