// KvIndexerService over the wire: an in-process gRPC server on 127.0.0.1 with
// an ephemeral port, called through the generated client stub (and a generic
// stub for raw bytes and unknown paths).
//
// Semantic behaviours run over the reference backend plugin (absl_rwlock,
// loaded with LoadedBackend); admission and shedding run over ProbeBackend,
// a test backend that counts calls and can hold prefix scans or applies until
// released.
#include <pthread.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/metrics_histogram.h"
#include "core/backend_loader.h"
#include "core/indexer.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/server_interceptor.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "server/kv_indexer_service.h"
#include "server/rejection_log.h"
#include "server/transport_settings.h"
#include "tests/support/requests.h"

#ifndef KVINDEXER_TEST_BACKEND_DIR
#error "KVINDEXER_TEST_BACKEND_DIR must name the directory of backend plugins"
#endif

namespace kvindexer {
namespace {

using namespace std::chrono_literals;
using ::kv_indexer::v1::ApplyExternalKvBatchRequest;
using ::kv_indexer::v1::ApplyExternalKvBatchResponse;
using ::kv_indexer::v1::ConfigureExpectedWorkersRequest;
using ::kv_indexer::v1::ConfigureExpectedWorkersResponse;
using ::kv_indexer::v1::ExternalKvAction;
using ::kv_indexer::v1::GetExternalKvHitCountsRequest;
using ::kv_indexer::v1::GetExternalKvHitCountsResponse;
using ::kv_indexer::v1::KVIndexer;
using ::kv_indexer::v1::MatchExternalKvPrefixRequest;
using ::kv_indexer::v1::MatchExternalKvPrefixResponse;
using ::kv_indexer::v1::MatchExternalKvRequest;
using ::kv_indexer::v1::MatchExternalKvResponse;
using ::kv_indexer::v1::ReplaceExternalKvSnapshotRequest;
using ::kv_indexer::v1::ReplaceExternalKvSnapshotResponse;
using test_support::Batch;
using test_support::ExpectedWorkers;
using test_support::PrefixRequest;
using test_support::Range;
using test_support::Snapshot;
using ::testing::HasSubstr;

// Bound on every wait in this file; tests never sleep to synchronise.
constexpr auto kWaitBound = 10s;

// ---------------------------------------------------------------------------
// Test doubles

// The real clock shifted by an adjustable offset. Deadlines from gRPC are in
// the real clock's base, so moving the offset forward "ages" every request.
class SkewedClock final : public WallClock {
 public:
  TimePoint Now() const override {
    return std::chrono::system_clock::now() + offset_.load();
  }
  void set_offset(Duration d) { offset_.store(d); }

 private:
  std::atomic<Duration> offset_{Duration::zero()};
};

// Counts calls; every hash is absent. PrefixScan and Apply can be made to wait
// until Release() (bounded by kWaitBound so a broken test cannot hang; a held
// scan that gives up counts as an exit, so a test that took that long
// fails).
class ProbeBackend final : public IndexBackend {
 public:
  std::atomic<int> applies{0};
  std::atomic<int> matches{0};
  std::atomic<int> hit_counts{0};

  void HoldPrefixScans() {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = true;
  }
  void HoldApplies() {
    std::lock_guard<std::mutex> lock(mu_);
    hold_applies_ = true;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = false;
    hold_applies_ = false;
    cv_.notify_all();
  }
  int prefix_entries() const {
    std::lock_guard<std::mutex> lock(mu_);
    return prefix_entries_;
  }
  // Prefix scans that have finished waiting and left the backend. While it
  // is 0 after HoldPrefixScans, every scan that entered is still held: an
  // RPC that completes meanwhile did not wait for one.
  int prefix_exits() const {
    std::lock_guard<std::mutex> lock(mu_);
    return prefix_exits_;
  }
  // The names of the threads prefix scans entered the backend on, in order.
  std::vector<std::string> prefix_threads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return prefix_threads_;
  }
  // Waits until `n` prefix scans have entered the backend.
  bool WaitForPrefixEntries(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWaitBound, [&] { return prefix_entries_ >= n; });
  }
  // Waits until `n` applies have entered the backend.
  bool WaitForApplyEntries(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWaitBound, [&] { return apply_entries_ >= n; });
  }

  // `applies` counts applies that have returned.
  BackendStatus Apply(const ApplyBatchView&) noexcept override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++apply_entries_;
      cv_.notify_all();
      cv_.wait_for(lock, kWaitBound, [&] { return !hold_applies_; });
    }
    applies.fetch_add(1);
    return Ok();
  }
  BackendStatus Match(HashSpan hashes, bool,
                      BlockVisitor* visitor) noexcept override {
    matches.fetch_add(1);
    VisitAbsent(hashes, visitor);
    return Ok();
  }
  BackendStatus PrefixScan(HashSpan hashes,
                           BlockVisitor* visitor) noexcept override {
    {
      char name[16] = {};
      pthread_getname_np(pthread_self(), name, sizeof(name));
      std::unique_lock<std::mutex> lock(mu_);
      ++prefix_entries_;
      prefix_threads_.emplace_back(name);
      cv_.notify_all();
      cv_.wait_for(lock, kWaitBound, [&] { return !hold_; });
      ++prefix_exits_;
    }
    VisitAbsent(hashes, visitor);
    return Ok();
  }
  BackendStatus HitCounts(HashSpan hashes, uint64_t* counts) noexcept override {
    hit_counts.fetch_add(1);
    for (size_t i = 0; i < hashes.size; ++i) counts[i] = 0;
    return Ok();
  }
  void GetStats(BackendStats*) noexcept override {}
  BackendStatus RemoveWorker(StringView, uint32_t* existed) noexcept override {
    if (existed != nullptr) *existed = 0;
    return BackendStatus{BackendCode::kOk, {}};
  }
  BackendStatus CountPlacements(StringView, uint64_t* counts,
                                uint32_t* existed) noexcept override {
    for (uint32_t tier = 0; tier <= kMaxTier; ++tier) counts[tier] = 0;
    if (existed != nullptr) *existed = 0;
    return BackendStatus{BackendCode::kOk, {}};
  }

 private:
  static BackendStatus Ok() { return BackendStatus{BackendCode::kOk, {}}; }
  static void VisitAbsent(HashSpan hashes, BlockVisitor* visitor) {
    for (size_t i = 0; i < hashes.size; ++i) {
      if (!visitor->OnBlock(BlockView{i, 0, nullptr, 0})) return;
    }
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool hold_ = false;
  bool hold_applies_ = false;
  int prefix_entries_ = 0;
  int prefix_exits_ = 0;
  std::vector<std::string> prefix_threads_;
  int apply_entries_ = 0;
};

// Records, per call, the method, the deadline the server context reports and
// the grpc-timeout metadata if the application can see it.
struct ObservedCall {
  std::string method;
  std::chrono::system_clock::time_point deadline;
  std::optional<std::string> grpc_timeout;
  // When the interceptor saw the call, after gRPC had set its deadline.
  std::chrono::system_clock::time_point observed_at;
};

class CallObserver {
 public:
  void Add(ObservedCall call) {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(std::move(call));
    added_.notify_all();
  }
  std::vector<ObservedCall> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  // Waits until `n` calls have been observed. A call that ended on the
  // client's side (its deadline passed) may reach the server later.
  bool WaitForCalls(size_t n) const {
    std::unique_lock<std::mutex> lock(mu_);
    return added_.wait_for(lock, kWaitBound,
                           [&] { return calls_.size() >= n; });
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable added_;
  std::vector<ObservedCall> calls_;
};

class ObservingInterceptor final : public grpc::experimental::Interceptor {
 public:
  ObservingInterceptor(grpc::experimental::ServerRpcInfo* info,
                       CallObserver* observer)
      : info_(info), observer_(observer) {}

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::
                POST_RECV_INITIAL_METADATA)) {
      ObservedCall call;
      call.observed_at = std::chrono::system_clock::now();
      call.method = info_->method();
      call.deadline = info_->server_context()->deadline();
      for (const auto& [key, value] : *methods->GetRecvInitialMetadata()) {
        if (key == "grpc-timeout") {
          call.grpc_timeout = std::string(value.data(), value.size());
        }
      }
      observer_->Add(std::move(call));
    }
    methods->Proceed();
  }

 private:
  grpc::experimental::ServerRpcInfo* info_;
  CallObserver* observer_;
};

class ObservingInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit ObservingInterceptorFactory(CallObserver* observer)
      : observer_(observer) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new ObservingInterceptor(info, observer_);
  }

 private:
  CallObserver* observer_;
};

// ---------------------------------------------------------------------------
// The in-process server

struct LoggedLine {
  spdlog::level::level_enum level;
  std::string text;
};

// The Indexer's operations as the service sees them, counting the calls
// of ConfigureIfUnchanged (the answer at once the service may try).
class CountingOperations final : public IndexOperations {
 public:
  explicit CountingOperations(IndexOperations& inner) : inner_(inner) {}
  int at_once_calls() const { return at_once_calls_.load(); }

  PendingAck Apply(const v1::ApplyExternalKvBatchRequest& req,
                   v1::ApplyExternalKvBatchResponse* resp,
                   const MutationOptions& options) override {
    return inner_.Apply(req, resp, options);
  }
  PendingAck Replace(const v1::ReplaceExternalKvSnapshotRequest& req,
                     v1::ReplaceExternalKvSnapshotResponse* resp,
                     const MutationOptions& options) override {
    return inner_.Replace(req, resp, options);
  }
  PendingAck Configure(const v1::ConfigureExpectedWorkersRequest& req,
                       v1::ConfigureExpectedWorkersResponse* resp) override {
    return inner_.Configure(req, resp);
  }
  std::optional<PendingAck> ConfigureIfUnchanged(
      const v1::ConfigureExpectedWorkersRequest& req,
      v1::ConfigureExpectedWorkersResponse* resp) override {
    at_once_calls_.fetch_add(1);
    return inner_.ConfigureIfUnchanged(req, resp);
  }
  PendingAck Invalidate(const v1::InvalidateWorkerRequest& req,
                        v1::InvalidateWorkerResponse* resp) override {
    return inner_.Invalidate(req, resp);
  }
  PendingAck Begin(const v1::BeginExternalKvSnapshotRequest& req,
                   v1::BeginExternalKvSnapshotResponse* resp) override {
    return inner_.Begin(req, resp);
  }
  PendingAck Append(const v1::AppendExternalKvSnapshotRequest& req,
                    v1::AppendExternalKvSnapshotResponse* resp) override {
    return inner_.Append(req, resp);
  }
  PendingAck Commit(const v1::CommitExternalKvSnapshotRequest& req,
                    v1::CommitExternalKvSnapshotResponse* resp,
                    const MutationOptions& options) override {
    return inner_.Commit(req, resp, options);
  }
  PendingAck Abort(const v1::AbortExternalKvSnapshotRequest& req,
                   v1::AbortExternalKvSnapshotResponse* resp) override {
    return inner_.Abort(req, resp);
  }
  std::string IndexerEpoch() const override { return inner_.IndexerEpoch(); }
  absl::Status Match(const v1::MatchExternalKvRequest& req,
                     v1::MatchExternalKvResponse* resp) override {
    return inner_.Match(req, resp);
  }
  absl::Status MatchPrefix(
      const v1::MatchExternalKvPrefixRequest& req,
      absl::FunctionRef<void(const PrefixAnswer&)> deliver) override {
    return inner_.MatchPrefix(req, deliver);
  }
  absl::Status HitCounts(const v1::GetExternalKvHitCountsRequest& req,
                         v1::GetExternalKvHitCountsResponse* resp) override {
    return inner_.HitCounts(req, resp);
  }

 private:
  IndexOperations& inner_;
  std::atomic<int> at_once_calls_{0};
};

class InProcessServer {
 public:
  InProcessServer(IndexBackend* backend, uint32_t prefix_limit,
                  uint32_t backend_abi_minor = kBackendAbiMinor,
                  bool read_heartbeats = true)
      : indexer_(backend, /*gate_log=*/nullptr, RequestLimits{},
                 backend_abi_minor),
        rejection_log_(
            [this](spdlog::level::level_enum level, std::string_view text) {
              std::lock_guard<std::mutex> lock(log_mu_);
              log_lines_.push_back({level, std::string(text)});
            }),
        operations_(indexer_.operations()),
        service_(operations_, prefix_limit, clock_, &rejection_log_,
                 read_heartbeats) {
    service_.AttachMetrics(nullptr, &apply_waits_);
    grpc::ServerBuilder builder;
    ApplyTransportSettings(builder);
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&service_);
    std::vector<
        std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
        interceptors;
    interceptors.push_back(
        std::make_unique<ObservingInterceptorFactory>(&observer_));
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
    server_ = builder.BuildAndStart();

    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    args.SetMaxSendMessageSize(-1);
    channel_ = grpc::CreateCustomChannel(
        target(), grpc::InsecureChannelCredentials(), args);
    stub_ = KVIndexer::NewStub(channel_);
  }

  ~InProcessServer() {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
  }

  bool started() const { return server_ != nullptr && port_ != 0; }
  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }
  KVIndexer::Stub& stub() { return *stub_; }
  std::shared_ptr<grpc::Channel> channel() { return channel_; }
  SkewedClock& clock() { return clock_; }
  Indexer& indexer() { return indexer_; }
  KvIndexerService& service() { return service_; }
  const CountingOperations& operations() const { return operations_; }
  // How long each task waited for the apply executor: one per task it ran.
  const Histogram& apply_waits() const { return apply_waits_; }
  CallObserver& observer() { return observer_; }
  std::vector<LoggedLine> log_lines() {
    std::lock_guard<std::mutex> lock(log_mu_);
    return log_lines_;
  }

 private:
  SkewedClock clock_;
  Indexer indexer_;
  std::mutex log_mu_;
  std::vector<LoggedLine> log_lines_;
  RejectionLog rejection_log_;
  Histogram apply_waits_{kLatencyBucketsSeconds};
  CountingOperations operations_;
  KvIndexerService service_;
  CallObserver observer_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<KVIndexer::Stub> stub_;
};

// ---------------------------------------------------------------------------
// Call helpers

std::unique_ptr<grpc::ClientContext> Context(
    std::optional<std::chrono::milliseconds> timeout = 30s) {
  auto context = std::make_unique<grpc::ClientContext>();
  if (timeout.has_value()) {
    context->set_deadline(std::chrono::system_clock::now() + *timeout);
  }
  return context;
}

grpc::Status Apply(InProcessServer& s, const ApplyExternalKvBatchRequest& req,
                   std::chrono::milliseconds timeout = 30s) {
  ApplyExternalKvBatchResponse resp;
  return s.stub().ApplyExternalKvBatch(Context(timeout).get(), req, &resp);
}

grpc::Status Apply(InProcessServer& s, const ApplyExternalKvBatchRequest& req,
                   ApplyExternalKvBatchResponse* resp) {
  return s.stub().ApplyExternalKvBatch(Context().get(), req, resp);
}

grpc::Status Replace(InProcessServer& s,
                     const ReplaceExternalKvSnapshotRequest& req,
                     ReplaceExternalKvSnapshotResponse* resp,
                     std::chrono::milliseconds timeout = 30s) {
  return s.stub().ReplaceExternalKvSnapshot(Context(timeout).get(), req, resp);
}

grpc::Status Configure(InProcessServer& s,
                       const ConfigureExpectedWorkersRequest& req,
                       ConfigureExpectedWorkersResponse* resp,
                       std::chrono::milliseconds timeout = 30s) {
  return s.stub().ConfigureExpectedWorkers(Context(timeout).get(), req, resp);
}

grpc::Status MatchPrefix(
    InProcessServer& s, const MatchExternalKvPrefixRequest& req,
    MatchExternalKvPrefixResponse* resp,
    std::optional<std::chrono::milliseconds> timeout = 30s) {
  return s.stub().MatchExternalKvPrefix(Context(timeout).get(), req, resp);
}

// Calls `method` with raw request bytes through a generic stub.
// `out`, when given, receives the response's bytes.
grpc::Status RawCall(InProcessServer& s, const std::string& method,
                     const std::string& bytes, std::string* out = nullptr) {
  grpc::GenericStub stub(s.channel());
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  auto context = Context(10s);
  std::promise<grpc::Status> done;
  stub.UnaryCall(
      context.get(), method, grpc::StubOptions(), &request, &response,
      [&done](grpc::Status status) { done.set_value(std::move(status)); });
  auto future = done.get_future();
  if (future.wait_for(kWaitBound) != std::future_status::ready) {
    context->TryCancel();
  }
  grpc::Status status = future.get();
  if (out != nullptr) {
    out->clear();
    std::vector<grpc::Slice> slices;
    if (status.ok() && response.Dump(&slices).ok()) {
      for (const grpc::Slice& part : slices) {
        out->append(reinterpret_cast<const char*>(part.begin()), part.size());
      }
    }
  }
  return status;
}

// ---------------------------------------------------------------------------
// Fixtures

class ServiceOverReferenceBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loaded =
        LoadedBackend::Load("absl_rwlock", KVINDEXER_TEST_BACKEND_DIR);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    backend_ = *std::move(loaded);
    server_ = std::make_unique<InProcessServer>(backend_->backend(), 32,
                                                backend_->abi_minor());
    ASSERT_TRUE(server_->started());
  }
  void TearDown() override {
    server_.reset();  // before the backend it points into
    backend_.reset();
  }

  std::unique_ptr<LoadedBackend> backend_;
  std::unique_ptr<InProcessServer> server_;
};

class ServiceOverProbeBackendTest : public ::testing::Test {
 protected:
  void Start(uint32_t prefix_limit, bool read_heartbeats = true) {
    server_ = std::make_unique<InProcessServer>(
        &backend_, prefix_limit, kBackendAbiMinor, read_heartbeats);
    ASSERT_TRUE(server_->started());
  }
  void TearDown() override {
    backend_.Release();
    server_.reset();
  }

  ProbeBackend backend_;
  std::unique_ptr<InProcessServer> server_;
};

// ---------------------------------------------------------------------------
// Behaviour 1 (numbers as in docs/contract.md, "Reference behaviours"):
// admission rejects without blocking writes.

TEST_F(ServiceOverProbeBackendTest, AdmissionRejectsWithoutBlockingApplies) {
  Start(/*prefix_limit=*/2);
  backend_.HoldPrefixScans();

  grpc::Status blocked_status[2];
  std::vector<std::thread> blocked;
  for (int i = 0; i < 2; ++i) {
    blocked.emplace_back([this, i, &blocked_status] {
      MatchExternalKvPrefixResponse resp;
      blocked_status[i] = MatchPrefix(*server_, PrefixRequest({-1}), &resp);
    });
  }
  ASSERT_TRUE(backend_.WaitForPrefixEntries(2));

  // Neither the rejection nor the apply may wait for the held scans: both
  // must come back while the two scans are still in the backend. The
  // deadlines only end a hang; a server that queued the third query would
  // admit it once a scan gave up, and the exits would show it.
  MatchExternalKvPrefixResponse third;
  const grpc::Status rejected =
      MatchPrefix(*server_, PrefixRequest({-1}), &third, kWaitBound);
  EXPECT_EQ(rejected.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << rejected.error_message();
  EXPECT_EQ(rejected.error_message(), "too many in-flight prefix queries");
  EXPECT_EQ(backend_.prefix_entries(), 2);

  ApplyExternalKvBatchRequest apply;
  apply.set_worker_id("worker");
  const grpc::Status applied = Apply(*server_, apply, kWaitBound);
  EXPECT_TRUE(applied.ok()) << applied.error_message();
  EXPECT_EQ(backend_.applies.load(), 1);
  EXPECT_EQ(backend_.prefix_exits(), 0)
      << "the rejection or the apply waited for a held scan";

  backend_.Release();
  for (std::thread& t : blocked) t.join();
  EXPECT_TRUE(blocked_status[0].ok()) << blocked_status[0].error_message();
  EXPECT_TRUE(blocked_status[1].ok()) << blocked_status[1].error_message();
  EXPECT_EQ(server_->service().admission().in_flight(), 0u);

  // The overload was logged once, at WARN.
  const std::vector<LoggedLine> lines = server_->log_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].level, spdlog::level::warn);
  EXPECT_THAT(lines[0].text, HasSubstr("rejected_total=1"));
}

// A prefix query runs on gRPC's callback thread while an inline slot is free;
// with every slot held by a scan, the next queries go to the scan executor,
// and the server still takes applies and rejects surplus queries.
TEST_F(ServiceOverProbeBackendTest, ScansRunInlineOnlyWhileASlotIsFree) {
  static_assert(kInlineScanSlots == 1, "the test holds one inline scan");
  Start(/*prefix_limit=*/3);
  backend_.HoldPrefixScans();

  std::vector<grpc::Status> held_status(3);
  std::vector<std::thread> held;
  for (size_t i = 0; i < held_status.size(); ++i) {
    held.emplace_back([this, i, &held_status] {
      MatchExternalKvPrefixResponse resp;
      held_status[i] =
          MatchPrefix(*server_, PrefixRequest({-1}), &resp, kWaitBound);
    });
    // One at a time, so the first query is the one that finds the slot free.
    if (!backend_.WaitForPrefixEntries(static_cast<int>(i) + 1)) break;
  }
  const std::vector<std::string> threads = backend_.prefix_threads();
  if (threads.size() != 3u) {
    backend_.Release();
    for (std::thread& t : held) t.join();
    FAIL() << threads.size() << " of 3 queries reached the backend";
  }
  EXPECT_NE(threads[0], "kvidx-scan");
  EXPECT_EQ(threads[1], "kvidx-scan");
  EXPECT_EQ(threads[2], "kvidx-scan");

  MatchExternalKvPrefixResponse rejected_resp;
  const grpc::Status rejected =
      MatchPrefix(*server_, PrefixRequest({-1}), &rejected_resp, kWaitBound);
  EXPECT_EQ(rejected.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  ApplyExternalKvBatchRequest apply;
  apply.set_worker_id("worker");
  const grpc::Status applied = Apply(*server_, apply, kWaitBound);
  EXPECT_TRUE(applied.ok()) << applied.error_message();
  EXPECT_EQ(backend_.prefix_exits(), 0)
      << "the rejection or the apply waited for a held scan";

  backend_.Release();
  for (std::thread& t : held) t.join();
  for (const grpc::Status& s : held_status) {
    EXPECT_TRUE(s.ok()) << s.error_message();
  }
  EXPECT_EQ(server_->service().admission().in_flight(), 0u);

  // With the slot free again, the next query runs inline once more.
  MatchExternalKvPrefixResponse resp;
  const grpc::Status again = MatchPrefix(*server_, PrefixRequest({-1}), &resp);
  EXPECT_TRUE(again.ok()) << again.error_message();
  ASSERT_EQ(backend_.prefix_threads().size(), 4u);
  EXPECT_NE(backend_.prefix_threads()[3], "kvidx-scan");
}

// Applies run off gRPC's callback threads: while applies are stuck in the
// backend (more of them than gRPC has callback threads), a prefix query, a
// match, a hit-count read and an oversize apply are all answered.
TEST_F(ServiceOverProbeBackendTest, QueriesAreServedWhileAppliesAreInBackend) {
  Start(/*prefix_limit=*/2);
  backend_.HoldApplies();

  constexpr int kApplies = 8;
  std::vector<grpc::Status> apply_status(kApplies);
  std::vector<std::thread> appliers;
  for (int i = 0; i < kApplies; ++i) {
    appliers.emplace_back([this, i, &apply_status] {
      ApplyExternalKvBatchRequest req;
      req.set_worker_id("worker-" + std::to_string(i));
      apply_status[static_cast<size_t>(i)] = Apply(*server_, req, 30s);
    });
  }
  ASSERT_TRUE(backend_.WaitForApplyEntries(1));

  MatchExternalKvPrefixResponse prefix_resp;
  const grpc::Status prefix =
      MatchPrefix(*server_, PrefixRequest({-1}), &prefix_resp, kWaitBound);
  EXPECT_TRUE(prefix.ok()) << prefix.error_message();
  EXPECT_EQ(backend_.prefix_entries(), 1);

  MatchExternalKvRequest match;
  match.add_hashes(1);
  MatchExternalKvResponse match_resp;
  const grpc::Status matched = server_->stub().MatchExternalKv(
      Context(kWaitBound).get(), match, &match_resp);
  EXPECT_TRUE(matched.ok()) << matched.error_message();
  GetExternalKvHitCountsRequest hits;
  hits.add_hashes(1);
  GetExternalKvHitCountsResponse hits_resp;
  const grpc::Status counted = server_->stub().GetExternalKvHitCounts(
      Context(kWaitBound).get(), hits, &hits_resp);
  EXPECT_TRUE(counted.ok()) << counted.error_message();

  // The size check stays on the callback thread, ahead of the held applies.
  const std::vector<int64_t> hashes = Range(0, 1049600);
  const grpc::Status oversize =
      Apply(*server_, Batch("w", "a").Report(kTierHbm, hashes), kWaitBound);
  EXPECT_EQ(oversize.error_code(), grpc::StatusCode::OUT_OF_RANGE)
      << oversize.error_message();

  // Every apply was still held while the queries were answered.
  EXPECT_EQ(backend_.applies.load(), 0);

  backend_.Release();
  for (std::thread& t : appliers) t.join();
  for (const grpc::Status& s : apply_status) {
    EXPECT_TRUE(s.ok()) << s.error_message();
  }
  EXPECT_EQ(backend_.applies.load(), kApplies);
}

// Waits, bounded, until the apply executor has finished every task it
// accepted (an answer is sent before its task returns).
bool WaitForIdleApplies(InProcessServer& server) {
  const auto until = std::chrono::steady_clock::now() + kWaitBound;
  while (server.service().apply_unfinished() != 0) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

// Waits, bounded, until `n` apply tasks are unfinished.
bool WaitForUnfinishedApplies(InProcessServer& server, size_t n) {
  const auto until = std::chrono::steady_clock::now() + kWaitBound;
  while (server.service().apply_unfinished() != n) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

grpc::Status ConfigureOne(InProcessServer& server, const char* address,
                          uint32_t* total = nullptr) {
  ConfigureExpectedWorkersResponse resp;
  const grpc::Status s = Configure(
      server, ExpectedWorkers().Worker("w1", address), &resp, kWaitBound);
  if (total != nullptr) *total = resp.total_workers();
  return s;
}

// A Configure that changes nothing (a bridge's heartbeat) is decided on
// the callback thread when the apply executor has nothing unfinished: the
// executor, whose queue waits are observed, runs none of them. One that
// changes something goes through the apply thread; one that arrives while
// an apply is unfinished is not even tried at once and queues behind it.
TEST_F(ServiceOverProbeBackendTest, AnUnchangedConfigureSkipsTheApplyThread) {
  Start(/*prefix_limit=*/2);
  uint32_t total = 0;
  ASSERT_TRUE(ConfigureOne(*server_, "http://a", &total).ok());  // a record
  EXPECT_EQ(total, 1u);
  EXPECT_EQ(server_->apply_waits().Read().count, 1u);
  ASSERT_TRUE(WaitForIdleApplies(*server_));
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(ConfigureOne(*server_, "http://a", &total).ok());
    EXPECT_EQ(total, 1u);
  }
  EXPECT_EQ(server_->apply_waits().Read().count, 1u);
  EXPECT_EQ(server_->operations().at_once_calls(), 6);   // the first declined
  ASSERT_TRUE(ConfigureOne(*server_, "http://b").ok());  // a new address
  EXPECT_EQ(server_->apply_waits().Read().count, 2u);
  ASSERT_TRUE(WaitForIdleApplies(*server_));

  backend_.HoldApplies();
  std::thread applier([this] {
    EXPECT_TRUE(
        Apply(*server_, Batch("w1", "http://b").Report(kTierHbm, {1})).ok());
  });
  ASSERT_TRUE(backend_.WaitForApplyEntries(1));
  const int tried = server_->operations().at_once_calls();
  std::thread heartbeat(
      [this] { EXPECT_TRUE(ConfigureOne(*server_, "http://b").ok()); });
  EXPECT_TRUE(WaitForUnfinishedApplies(*server_, 2));
  EXPECT_EQ(server_->service().apply_queue_depth(), 1u);
  backend_.Release();
  applier.join();
  heartbeat.join();
  EXPECT_EQ(server_->operations().at_once_calls(), tried);
  EXPECT_EQ(backend_.applies.load(), 1);
  EXPECT_EQ(server_->apply_waits().Read().count, 4u);  // the apply, then it
}

// With the apply executor idle but the mutation mutex held by someone else
// (here a checkpoint's export of the records), an unchanged Configure does
// not wait on the callback thread: it queues, and is answered once the
// mutex is free.
TEST_F(ServiceOverProbeBackendTest, AHeldMutexSendsTheConfigureToTheQueue) {
  Start(/*prefix_limit=*/2);
  ASSERT_TRUE(ConfigureOne(*server_, "http://a").ok());
  ASSERT_TRUE(WaitForIdleApplies(*server_));
  std::mutex mu;
  std::condition_variable cv;
  bool exporting = false;
  bool release = false;
  std::thread exporter([&] {
    server_->indexer().durable_state().ExportHost(
        [&](const state::v1::CheckpointChunk&) {
          std::unique_lock<std::mutex> lock(mu);
          exporting = true;
          cv.notify_all();
          cv.wait_for(lock, kWaitBound, [&] { return release; });
        });
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, kWaitBound, [&] { return exporting; }));
  }
  std::atomic<bool> answered{false};
  std::thread heartbeat([&] {
    EXPECT_TRUE(ConfigureOne(*server_, "http://a").ok());
    answered = true;
  });
  // Tried at once, refused by the held mutex, then taken by the apply
  // thread, which waits for the mutex.
  EXPECT_TRUE(WaitForUnfinishedApplies(*server_, 1));
  EXPECT_FALSE(answered.load());
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
    cv.notify_all();
  }
  exporter.join();
  heartbeat.join();
  EXPECT_TRUE(answered.load());
  EXPECT_EQ(server_->operations().at_once_calls(), 2);
  EXPECT_EQ(server_->apply_waits().Read().count, 2u);
}

// The apply thread runs kApplyNiceIncrement nice levels below the test's
// threads (Linux: nice is per thread; field 19 of /proc/<pid>/task/<tid>/stat).
TEST_F(ServiceOverProbeBackendTest, ApplyThreadRunsAtLowerPriority) {
  Start(/*prefix_limit=*/2);
  const int base = getpriority(PRIO_PROCESS, 0);
  std::vector<int> apply_nice;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name != "kvidx-apply") continue;
    std::ifstream stat(task.path() / "stat");
    std::string line;
    std::getline(stat, line);
    // Fields after the parenthesised name: state is field 3, nice field 19.
    std::istringstream fields(line.substr(line.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 19; ++i) fields >> field;
    apply_nice.push_back(std::stoi(field));
  }
  ASSERT_EQ(apply_nice.size(), kApplyThreads);
  for (int nice : apply_nice) {
    EXPECT_EQ(nice, std::min(base + kApplyNiceIncrement, 19));
  }
}

// Validation precedes admission: an empty prefix query is INVALID_ARGUMENT
// even when every permit is taken.
TEST_F(ServiceOverProbeBackendTest, ValidationBeforeAdmission) {
  Start(/*prefix_limit=*/1);
  backend_.HoldPrefixScans();
  std::thread holder([this] {
    MatchExternalKvPrefixResponse resp;
    EXPECT_TRUE(MatchPrefix(*server_, PrefixRequest({7}), &resp).ok());
  });
  ASSERT_TRUE(backend_.WaitForPrefixEntries(1));
  MatchExternalKvPrefixResponse resp;
  const grpc::Status empty =
      MatchPrefix(*server_, PrefixRequest({}), &resp, kWaitBound);
  EXPECT_EQ(empty.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(empty.error_message(), "hashes must not be empty");
  const grpc::Status busy =
      MatchPrefix(*server_, PrefixRequest({7}), &resp, kWaitBound);
  EXPECT_EQ(busy.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(backend_.prefix_exits(), 0) << "a rejection waited for the scan";
  backend_.Release();
  holder.join();
}

// MAX_CONCURRENT_STREAMS: one connection carries at most 64 calls at once.
// 70 prefix queries are held in the backend (admission allows 100); only 64
// arrive. An apply on a second connection still goes through, and by the time
// it has, no 65th query has arrived.
TEST_F(ServiceOverProbeBackendTest, SixtyFourStreamsPerConnection) {
  Start(/*prefix_limit=*/100);
  backend_.HoldPrefixScans();
  constexpr int kCalls = 70;
  struct Pending {
    grpc::ClientContext context;
    MatchExternalKvPrefixResponse response;
  };
  std::vector<std::unique_ptr<Pending>> pending;
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  int ok = 0;
  const MatchExternalKvPrefixRequest req = PrefixRequest({5});
  for (int i = 0; i < kCalls; ++i) {
    auto p = std::make_unique<Pending>();
    p->context.set_deadline(std::chrono::system_clock::now() + 60s);
    server_->stub().async()->MatchExternalKvPrefix(
        &p->context, &req, &p->response, [&](grpc::Status status) {
          std::lock_guard<std::mutex> lock(mu);
          ++done;
          if (status.ok()) ++ok;
          cv.notify_all();
        });
    pending.push_back(std::move(p));
  }
  ASSERT_TRUE(backend_.WaitForPrefixEntries(kMaxConcurrentStreams));

  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a new connection
  auto other = KVIndexer::NewStub(grpc::CreateCustomChannel(
      server_->target(), grpc::InsecureChannelCredentials(), args));
  ApplyExternalKvBatchRequest apply;
  apply.set_worker_id("worker");
  ApplyExternalKvBatchResponse apply_resp;
  const grpc::Status applied = other->ApplyExternalKvBatch(
      Context(kWaitBound).get(), apply, &apply_resp);
  EXPECT_TRUE(applied.ok()) << applied.error_message();
  EXPECT_EQ(backend_.prefix_entries(), kMaxConcurrentStreams);

  backend_.Release();
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, kWaitBound, [&] { return done == kCalls; }));
  EXPECT_EQ(ok, kCalls);
  EXPECT_EQ(backend_.prefix_entries(), kCalls);
}

// ---------------------------------------------------------------------------
// Deadline shedding over the wire (behaviours 32, 33, 50; docs/contract.md,
// "MatchExternalKvPrefix > Deadline shedding").

TEST_F(ServiceOverProbeBackendTest, ExpiredPrefixQueryNeverReachesBackend) {
  Start(32);
  // The server's clock runs 60 s ahead: a 30 s budget is already spent.
  server_->clock().set_offset(60s);
  MatchExternalKvPrefixResponse resp;
  const grpc::Status shed =
      MatchPrefix(*server_, PrefixRequest({1, 2}), &resp, 30s);
  EXPECT_EQ(shed.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(shed.error_message(),
            "prefix query waited longer than its caller deadline");
  EXPECT_EQ(backend_.prefix_entries(), 0);
  EXPECT_EQ(server_->service().admission().in_flight(), 0u);

  // Shedding comes before validation.
  const grpc::Status shed_empty =
      MatchPrefix(*server_, PrefixRequest({}), &resp, 30s);
  EXPECT_EQ(shed_empty.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);

  // Logged at INFO at totals 1 and 2.
  const std::vector<LoggedLine> lines = server_->log_lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].level, spdlog::level::info);
  EXPECT_THAT(lines[0].text,
              HasSubstr("shedding prefix query whose caller deadline already "
                        "passed shed_total=1 waited_ms="));
  EXPECT_THAT(lines[0].text, HasSubstr("budget_ms="));
  EXPECT_THAT(lines[1].text, HasSubstr("shed_total=2"));
}

TEST_F(ServiceOverProbeBackendTest, PrefixQueryInsideDeadlineIsServed) {
  Start(32);
  server_->clock().set_offset(10ms);
  MatchExternalKvPrefixResponse resp;
  const grpc::Status served =
      MatchPrefix(*server_, PrefixRequest({1}), &resp, 30s);
  EXPECT_TRUE(served.ok()) << served.error_message();
  EXPECT_EQ(backend_.prefix_entries(), 1);
}

TEST_F(ServiceOverProbeBackendTest, NoDeadlineIsNeverShed) {
  Start(32);
  server_->clock().set_offset(std::chrono::hours(24 * 365));
  MatchExternalKvPrefixResponse resp;
  const grpc::Status served =
      MatchPrefix(*server_, PrefixRequest({1}), &resp, std::nullopt);
  EXPECT_TRUE(served.ok()) << served.error_message();
  EXPECT_EQ(backend_.prefix_entries(), 1);
}

TEST_F(ServiceOverProbeBackendTest, OtherMethodsAreNeverShed) {
  Start(32);
  server_->clock().set_offset(60s);
  EXPECT_TRUE(Apply(*server_, Batch("w", "a").Report(kTierHbm, {1}), 30s).ok());
  MatchExternalKvRequest match;
  match.add_hashes(1);
  MatchExternalKvResponse match_resp;
  EXPECT_TRUE(server_->stub()
                  .MatchExternalKv(Context().get(), match, &match_resp)
                  .ok());
  GetExternalKvHitCountsRequest hits;
  hits.add_hashes(1);
  GetExternalKvHitCountsResponse hits_resp;
  EXPECT_TRUE(server_->stub()
                  .GetExternalKvHitCounts(Context().get(), hits, &hits_resp)
                  .ok());
  ConfigureExpectedWorkersResponse configured;
  EXPECT_TRUE(
      Configure(*server_, ExpectedWorkers().Worker("w", "a"), &configured)
          .ok());
  ReplaceExternalKvSnapshotResponse replaced;
  EXPECT_TRUE(
      Replace(*server_, Snapshot("w", "a").Tier(kTierHbm, {1}), &replaced)
          .ok());
  EXPECT_EQ(backend_.applies.load(), 2);
  EXPECT_EQ(backend_.matches.load(), 1);
  EXPECT_EQ(backend_.hit_counts.load(), 1);
  EXPECT_TRUE(server_->log_lines().empty());
}

// Replace and Configure take no prefix permit: they succeed while held scans
// hold every one.
TEST_F(ServiceOverProbeBackendTest, RecoveryCallsNeverWaitForPrefixPermits) {
  Start(/*prefix_limit=*/1);
  backend_.HoldPrefixScans();
  grpc::Status held_status;
  std::thread held([this, &held_status] {
    MatchExternalKvPrefixResponse resp;
    held_status = MatchPrefix(*server_, PrefixRequest({-1}), &resp);
  });
  ASSERT_TRUE(backend_.WaitForPrefixEntries(1));
  ConfigureExpectedWorkersResponse configured;
  const grpc::Status c = Configure(*server_, ExpectedWorkers().Worker("w", "a"),
                                   &configured, kWaitBound);
  EXPECT_TRUE(c.ok()) << c.error_message();
  ReplaceExternalKvSnapshotResponse replaced;
  const grpc::Status r =
      Replace(*server_, Snapshot("w", "a").Epoch("e").AppliedSeq(4), &replaced,
              kWaitBound);
  EXPECT_TRUE(r.ok()) << r.error_message();
  EXPECT_EQ(replaced.applied_seq(), 4u);
  EXPECT_EQ(backend_.prefix_exits(), 0)
      << "a recovery call waited for a held scan";
  backend_.Release();
  held.join();
  EXPECT_TRUE(held_status.ok()) << held_status.error_message();
}

// Behaviour 8 (server side): a 250 ms client deadline reaches the server
// exactly once. gRPC C++ consumes the grpc-timeout header into the call
// deadline and does not show it to the application, so the observable form is
// a finite deadline carrying the 250 ms budget.
TEST_F(ServiceOverProbeBackendTest, ClientDeadlineReachesServer) {
  Start(32);
  // The server's deadline is its arrival time plus the time the client had
  // left when it sent the header: at most 250 ms after the interceptor saw
  // the call, however long the call took on a loaded machine. gRPC rounds
  // to whole milliseconds, reads its clocks from per-thread caches and
  // converts between its clock and the system clock, which may add a few
  // milliseconds; kSkew covers that and is far below a second 250 ms.
  constexpr auto kSkew = 50ms;
  // Connected first, so that the 250 ms are not spent on the connection.
  ASSERT_TRUE(server_->channel()->WaitForConnected(
      std::chrono::system_clock::now() + kWaitBound));
  const auto before = std::chrono::system_clock::now();
  MatchExternalKvPrefixResponse resp;
  // The call itself may or may not beat 250 ms; what matters is what the
  // server saw.
  (void)MatchPrefix(*server_, PrefixRequest({1, 2, 3}), &resp, 250ms);
  ASSERT_TRUE(server_->observer().WaitForCalls(1));
  const std::vector<ObservedCall> calls = server_->observer().calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].method, "/kv_indexer.v1.KVIndexer/MatchExternalKvPrefix");
  EXPECT_NE(calls[0].deadline, std::chrono::system_clock::time_point::max());
  EXPECT_GT(calls[0].deadline, before);
  EXPECT_LE(calls[0].deadline, calls[0].observed_at + 250ms + kSkew);
  // Tripwire: gRPC C++ 1.51 turns the header into the deadline and hides it
  // from the application. Should it ever become visible, the service could
  // read the caller's budget from it directly (see kv_indexer_service.h).
  EXPECT_FALSE(calls[0].grpc_timeout.has_value()) << *calls[0].grpc_timeout;
}

// ---------------------------------------------------------------------------
// Status codes and limits.

// grpc.health.v1 and reflection are registered by kv-indexer-server:
// server/health_service_test.cc.
TEST_F(ServiceOverProbeBackendTest, UnknownMethodIsUnimplemented) {
  Start(32);
  const grpc::Status status =
      RawCall(*server_, "/no.such.v1.Service/Method", "");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

TEST_F(ServiceOverProbeBackendTest, InvalidateWorkerIsServed) {
  Start(32);
  // An empty request names no stream.
  const grpc::Status status =
      RawCall(*server_, "/kv_indexer.v1.KVIndexer/InvalidateWorker", "");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "worker_id must not be empty");
}

TEST_F(ServiceOverProbeBackendTest, UndecodableRequestIsInternal) {
  Start(32);
  // Field 1 as a length-delimited string of 100 bytes, truncated.
  const grpc::Status status =
      RawCall(*server_, "/kv_indexer.v1.KVIndexer/ApplyExternalKvBatch",
              std::string("\x0a\x64xyz", 5));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(backend_.applies.load(), 0);
}

// ---------------------------------------------------------------------------
// Heartbeats (docs/contract.md, "Recovery > Worker liveness and removal"):
// the request metadata kv-indexer-heartbeat-ttl-ms marks the worker.

grpc::Status ApplyWithHeaders(
    InProcessServer& s, const ApplyExternalKvBatchRequest& req,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  auto context = Context();
  for (const auto& [key, value] : headers) context->AddMetadata(key, value);
  ApplyExternalKvBatchResponse resp;
  return s.stub().ApplyExternalKvBatch(context.get(), req, &resp);
}

TEST_F(ServiceOverProbeBackendTest, TheHeartbeatHeaderMarksTheWorker) {
  Start(4);
  Indexer& indexer = server_->indexer();
  // A seed-era apply without the header: not marked.
  ASSERT_TRUE(Apply(*server_, Batch("plain", "a")).ok());
  EXPECT_FALSE(indexer.operator_view().HeartbeatDeadline("plain").has_value());

  const auto before = indexer.operator_view().clock().Now();
  ASSERT_TRUE(ApplyWithHeaders(*server_, Batch("beating", "a"),
                               {{"kv-indexer-heartbeat-ttl-ms", "30000"}})
                  .ok());
  const auto deadline = indexer.operator_view().HeartbeatDeadline("beating");
  ASSERT_TRUE(deadline.has_value());
  EXPECT_GE(*deadline, before + 30s);
  EXPECT_LE(*deadline, indexer.operator_view().clock().Now() + 30s);

  // A gated probe refused at G1 marks its worker all the same.
  const grpc::Status refused =
      ApplyWithHeaders(*server_, Batch("unknown", "a").Gated("e", 0),
                       {{"kv-indexer-heartbeat-ttl-ms", "400"}});
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(indexer.operator_view().HeartbeatDeadline("unknown").has_value());

  // A malformed value is ignored; an invalid request marks nothing.
  ASSERT_TRUE(ApplyWithHeaders(*server_, Batch("odd", "a"),
                               {{"kv-indexer-heartbeat-ttl-ms", "soon"}})
                  .ok());
  EXPECT_FALSE(indexer.operator_view().HeartbeatDeadline("odd").has_value());
  EXPECT_EQ(ApplyWithHeaders(*server_, Batch("bad", "a").Report(0, {1}),
                             {{"kv-indexer-heartbeat-ttl-ms", "400"}})
                .error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(indexer.operator_view().HeartbeatDeadline("bad").has_value());

  const LivenessStats stats = indexer.operator_view().liveness_stats();
  EXPECT_EQ(stats.heartbeats, 2u);
  EXPECT_EQ(stats.malformed_heartbeats, 1u);
}

TEST_F(ServiceOverProbeBackendTest, WithoutLivenessTheHeaderIsIgnored) {
  Start(4, /*read_heartbeats=*/false);
  ASSERT_TRUE(ApplyWithHeaders(*server_, Batch("w", "a"),
                               {{"kv-indexer-heartbeat-ttl-ms", "400"}})
                  .ok());
  EXPECT_FALSE(
      server_->indexer().operator_view().HeartbeatDeadline("w").has_value());
  EXPECT_EQ(server_->indexer().operator_view().liveness_stats().heartbeats, 0u);
}

TEST_F(ServiceOverReferenceBackendTest, ValidationErrorsAreInvalidArgument) {
  // Behaviour 3.
  ApplyExternalKvBatchRequest empty_worker =
      Batch("", "a").Report(kTierHbm, {1});
  grpc::Status s = Apply(*server_, empty_worker);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "worker_id must not be empty");

  ApplyExternalKvBatchRequest bad_type = Batch("w", "a").Report(kTierHbm, {1});
  bad_type.mutable_actions(0)->set_type(
      static_cast<::kv_indexer::v1::ExternalKvActionType>(999));
  s = Apply(*server_, bad_type);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "action type is not supported");

  MatchExternalKvRequest match;
  MatchExternalKvResponse match_resp;
  s = server_->stub().MatchExternalKv(Context().get(), match, &match_resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "hashes must not be empty");

  GetExternalKvHitCountsRequest hits;
  GetExternalKvHitCountsResponse hits_resp;
  s = server_->stub().GetExternalKvHitCounts(Context().get(), hits, &hits_resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  MatchExternalKvPrefixResponse prefix_resp;
  s = MatchPrefix(*server_, PrefixRequest({}), &prefix_resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "hashes must not be empty");
}

TEST_F(ServiceOverReferenceBackendTest, LimitsAreResourceExhausted) {
  // 257 actions.
  ApplyExternalKvBatchRequest many_actions;
  many_actions.set_worker_id("w");
  for (int i = 0; i < 257; ++i) {
    ExternalKvAction* a = many_actions.add_actions();
    a->set_type(::kv_indexer::v1::ACTION_CLEAR_ALL_AT_TIER);
    a->set_tier(::kv_indexer::v1::TIER_HBM);
  }
  grpc::Status s = Apply(*server_, many_actions);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.error_message(), "batch contains 257 actions; maximum is 256");

  // 16,385 hashes: bounded for apply, match and hit counts; not for prefix.
  const std::vector<int64_t> too_many = Range(0, 16385);
  s = Apply(*server_, Batch("w", "a").Report(kTierHbm, too_many));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.error_message(), "batch contains 16385 hashes; maximum is 16384");

  MatchExternalKvRequest match;
  match.mutable_hashes()->Add(too_many.begin(), too_many.end());
  MatchExternalKvResponse match_resp;
  s = server_->stub().MatchExternalKv(Context().get(), match, &match_resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.error_message(),
            "request contains 16385 hashes; maximum is 16384");

  GetExternalKvHitCountsRequest hits;
  hits.mutable_hashes()->Add(too_many.begin(), too_many.end());
  GetExternalKvHitCountsResponse hits_resp;
  s = server_->stub().GetExternalKvHitCounts(Context().get(), hits, &hits_resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);

  MatchExternalKvPrefixResponse prefix_resp;
  s = MatchPrefix(*server_, PrefixRequest(too_many), &prefix_resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

// ---------------------------------------------------------------------------
// Behaviours 2, 4, 5: semantics through the service.

TEST_F(ServiceOverReferenceBackendTest, MultipleWorkersShareOneServer) {
  ASSERT_TRUE(Apply(*server_,
                    Batch("worker-0", "10.0.0.1:9000").Report(kTierHbm, {1, 3}))
                  .ok());
  ASSERT_TRUE(Apply(*server_,
                    Batch("worker-1", "10.0.0.2:9000").Report(kTierHbm, {2, 3}))
                  .ok());

  MatchExternalKvRequest match;
  match.add_hashes(1);
  match.add_hashes(2);
  match.add_hashes(3);
  MatchExternalKvResponse match_resp;
  ASSERT_TRUE(server_->stub()
                  .MatchExternalKv(Context().get(), match, &match_resp)
                  .ok());
  std::vector<std::string> workers;
  for (const auto& m : match_resp.matches()) workers.push_back(m.worker_id());
  EXPECT_THAT(workers, ::testing::UnorderedElementsAre("worker-0", "worker-1"));

  MatchExternalKvRequest counting;
  counting.add_hashes(1);
  counting.set_count_as_hit(true);
  ASSERT_TRUE(server_->stub()
                  .MatchExternalKv(Context().get(), counting, &match_resp)
                  .ok());
  GetExternalKvHitCountsRequest hits;
  hits.add_hashes(1);
  hits.add_hashes(4);
  GetExternalKvHitCountsResponse hits_resp;
  ASSERT_TRUE(server_->stub()
                  .GetExternalKvHitCounts(Context().get(), hits, &hits_resp)
                  .ok());
  ASSERT_EQ(hits_resp.entries_size(), 1);
  EXPECT_EQ(hits_resp.entries(0).hash(), 1);
  EXPECT_GE(hits_resp.entries(0).hit_count_total(), 1u);
}

TEST_F(ServiceOverReferenceBackendTest, PrefixQueryOrdersByLength) {
  ASSERT_TRUE(Apply(*server_,
                    Batch("long", "10.0.0.1:9000").Report(kTierHbm, {1, 2, 3}))
                  .ok());
  ASSERT_TRUE(
      Apply(*server_, Batch("short", "10.0.0.2:9000").Report(kTierHbm, {1}))
          .ok());
  MatchExternalKvPrefixResponse resp;
  ASSERT_TRUE(MatchPrefix(*server_, PrefixRequest({1, 2, 3}), &resp).ok());
  EXPECT_EQ(resp.best_prefix_blocks(), 3u);
  EXPECT_EQ(resp.blocks_read(), 3u);
  ASSERT_EQ(resp.matches_size(), 2);
  EXPECT_EQ(resp.matches(0).worker_id(), "long");
  EXPECT_EQ(resp.matches(0).worker_address(), "10.0.0.1:9000");
  EXPECT_EQ(resp.matches(0).matched_prefix_blocks(), 3u);
  EXPECT_EQ(resp.matches(1).worker_id(), "short");
  EXPECT_EQ(resp.matches(1).matched_prefix_blocks(), 1u);
}

TEST_F(ServiceOverReferenceBackendTest, PrefixLongerThanOneApplyChunk) {
  const std::vector<int64_t> hashes = Range(0, 16385);
  ApplyExternalKvBatchRequest first =
      Batch("w", "10.0.0.1:9000")
          .Report(kTierHbm,
                  std::vector<int64_t>(hashes.begin(), hashes.begin() + 16384));
  first.set_seq(0);
  ApplyExternalKvBatchRequest second =
      Batch("w", "10.0.0.1:9000").Report(kTierHbm, {16384});
  second.set_seq(1);
  ASSERT_TRUE(Apply(*server_, first).ok());
  ASSERT_TRUE(Apply(*server_, second).ok());
  MatchExternalKvPrefixResponse resp;
  ASSERT_TRUE(MatchPrefix(*server_, PrefixRequest(hashes), &resp).ok());
  EXPECT_EQ(resp.best_prefix_blocks(), 16385u);
  EXPECT_EQ(resp.blocks_read(), 16385u);
}

// Concurrent prefix queries and applies: every prefix query is either served
// or rejected as overloaded, applies always succeed, and every permit comes
// back.
TEST_F(ServiceOverReferenceBackendTest, ConcurrentQueriesAndApplies) {
  server_ = nullptr;  // restart with a small admission limit
  server_ = std::make_unique<InProcessServer>(backend_->backend(), 2);
  ASSERT_TRUE(server_->started());
  ASSERT_TRUE(
      Apply(*server_, Batch("w", "10.0.0.1:1").Report(kTierHbm, Range(0, 512)))
          .ok());

  constexpr int kQueryThreads = 6;
  constexpr int kQueriesPerThread = 150;
  std::atomic<int> served{0};
  std::atomic<int> overloaded{0};
  std::atomic<int> other{0};
  std::atomic<int> applies_ok{0};
  std::vector<std::thread> threads;
  const MatchExternalKvPrefixRequest req = PrefixRequest(Range(0, 512));
  for (int t = 0; t < kQueryThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kQueriesPerThread; ++i) {
        MatchExternalKvPrefixResponse resp;
        const grpc::Status s = MatchPrefix(*server_, req, &resp);
        if (s.ok() && resp.best_prefix_blocks() == 512) {
          served.fetch_add(1);
        } else if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
          overloaded.fetch_add(1);
        } else {
          other.fetch_add(1);
        }
      }
    });
  }
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const std::string worker = "writer-" + std::to_string(t);
        if (Apply(*server_,
                  Batch(worker, "10.0.0.9:1").Report(kTierHbm, {1000 + i}))
                .ok()) {
          applies_ok.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(served.load() + overloaded.load(),
            kQueryThreads * kQueriesPerThread);
  EXPECT_GT(served.load(), 0);
  EXPECT_EQ(applies_ok.load(), 100);
  EXPECT_EQ(server_->service().admission().in_flight(), 0u);
  EXPECT_EQ(server_->service().rejection_log().rejected_total(),
            static_cast<uint64_t>(overloaded.load()));
}

// ---------------------------------------------------------------------------
// Behaviours 6 and 7: message size.

TEST_F(ServiceOverReferenceBackendTest, RequestAboveFourMiBIsAccepted) {
  ASSERT_TRUE(
      Apply(*server_, Batch("w", "10.0.0.1:9000").Report(kTierHbm, {-1})).ok());
  std::vector<int64_t> hashes = Range(1, 599999);
  hashes.insert(hashes.begin(), -1);
  const MatchExternalKvPrefixRequest req = PrefixRequest(hashes);
  ASSERT_GT(req.ByteSizeLong(), 4u * 1024 * 1024);
  ASSERT_LT(req.ByteSizeLong(), 8u * 1024 * 1024);
  MatchExternalKvPrefixResponse resp;
  const grpc::Status s = MatchPrefix(*server_, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.best_prefix_blocks(), 1u);
}

// A prefix request of exactly `bytes` serialized bytes (8 MiB region): 1 + 4
// bytes of packed-field header, 1,048,575 hashes, and a max_blocks field
// whose varint length makes up the rest.
MatchExternalKvPrefixRequest PrefixOfSize(size_t bytes) {
  MatchExternalKvPrefixRequest req = PrefixRequest(Range(0, 1048575));
  // 1 tag byte + a 2- or 3-byte varint.
  req.set_max_blocks(bytes == kMaxRequestBytes ? 1000 : 100000);
  return req;
}

TEST_F(ServiceOverReferenceBackendTest, ExactlyEightMiBIsAccepted) {
  const MatchExternalKvPrefixRequest req = PrefixOfSize(kMaxRequestBytes);
  ASSERT_EQ(req.ByteSizeLong(), kMaxRequestBytes);
  MatchExternalKvPrefixResponse resp;
  const grpc::Status s = MatchPrefix(*server_, req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.blocks_read(), 1u);  // hash 0 is unknown
}

TEST_F(ServiceOverReferenceBackendTest, OneByteAboveEightMiBIsOutOfRange) {
  const MatchExternalKvPrefixRequest req = PrefixOfSize(kMaxRequestBytes + 1);
  ASSERT_EQ(req.ByteSizeLong(), kMaxRequestBytes + 1);
  MatchExternalKvPrefixResponse resp;
  const grpc::Status s = MatchPrefix(*server_, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(s.error_message(),
            "request message is 8388609 bytes; maximum is 8388608");
}

// Behaviour 7.
TEST_F(ServiceOverReferenceBackendTest, PrefixAboveEightMiBIsOutOfRange) {
  const MatchExternalKvPrefixRequest req =
      PrefixRequest(Range(0, 8 * 1024 * 1024 / 8 + 1024));
  MatchExternalKvPrefixResponse resp;
  const grpc::Status s = MatchPrefix(*server_, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE)
      << s.error_message();
}

// A seed-era client's answers are byte for byte what they were before the
// line-A fields existed: no new field appears in any of them.
TEST_F(ServiceOverReferenceBackendTest, SeedEraAnswersKeepTheirBytes) {
  const auto call = [&](const std::string& method,
                        const google::protobuf::Message& req) {
    std::string out;
    const grpc::Status s =
        RawCall(*server_, "/kv_indexer.v1.KVIndexer/" + method,
                req.SerializeAsString(), &out);
    EXPECT_TRUE(s.ok()) << method << ": " << s.error_message();
    return out;
  };
  using std::string_literals::operator""s;
  const ConfigureExpectedWorkersRequest configure =
      ExpectedWorkers().Worker("w1", "http://a");
  EXPECT_EQ(call("ConfigureExpectedWorkers", configure), "\x08\x01"s);
  EXPECT_EQ(call("ReplaceExternalKvSnapshot", Snapshot("w1", "http://a")
                                                  .Epoch("e")
                                                  .AppliedSeq(5)
                                                  .Tier(kTierHbm, {1, 2})
                                                  .request()),
            "\x08\x05"s);
  EXPECT_EQ(call("ApplyExternalKvBatch",
                 Batch("w1", "http://a").Report(kTierHbm, {3}).Gated("e", 6)),
            "\x20\x06"s);
  EXPECT_EQ(call("ApplyExternalKvBatch",
                 Batch("w1", "http://a").Report(kTierHbm, {3}).Gated("e", 6)),
            "\x20\x06\x28\x01"s);
  EXPECT_EQ(call("ConfigureExpectedWorkers", configure), "\x08\x01\x10\x01"s);
  EXPECT_EQ(call("MatchExternalKvPrefix", PrefixRequest({1, 2, 3, 4})),
            "\x0a\x10\x0a\x08http://a\x10\x03\x1a\x02w1"
            "\x10\x03\x18\x04"s);
  MatchExternalKvRequest match;
  match.add_hashes(3);
  EXPECT_EQ(call("MatchExternalKv", match),
            "\x0a\x22\x0a\x02w1\x12\x08http://a\x1a\x12\x08\x01\x12\x08"
            "\x03\x00\x00\x00\x00\x00\x00\x00\x1a\x01\x00\x22\x01\x00"s);
}

// A coverage query may carry the router's eligible workers on top of its
// longest prompt: 9 MiB. Other requests keep 8 MiB and its message.
TEST_F(ServiceOverReferenceBackendTest, ACoverageQueryMayTakeNineMiB) {
  MatchExternalKvPrefixRequest req =
      PrefixRequest(Range(0, (8 * 1024 * 1024 + 512 * 1024) / 8));
  MatchExternalKvPrefixResponse resp;
  grpc::Status s = MatchPrefix(*server_, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(s.error_message(), "request message is " +
                                   std::to_string(req.ByteSizeLong()) +
                                   " bytes; maximum is 8388608");

  req.add_eligible_worker_addresses("http://a");
  s = MatchPrefix(*server_, req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(resp.complete_coverage());
  ASSERT_EQ(resp.uncovered_worker_addresses_size(), 1);

  const std::vector<int64_t> more = Range(0, 1024 * 1024 / 8);
  req.mutable_hashes()->Add(more.begin(), more.end());
  ASSERT_GT(req.ByteSizeLong(), 9u * 1024 * 1024);
  s = MatchPrefix(*server_, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(s.error_message(), "request message is " +
                                   std::to_string(req.ByteSizeLong()) +
                                   " bytes; maximum is 9437184");
}

// Every method has the limit, and it is checked before decoding: an apply
// that would fail validation with RESOURCE_EXHAUSTED gets OUT_OF_RANGE.
TEST_F(ServiceOverReferenceBackendTest, EveryMethodRefusesAboveEightMiB) {
  const std::vector<int64_t> hashes = Range(0, 1049600);
  grpc::Status s = Apply(*server_, Batch("w", "a").Report(kTierHbm, hashes));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);

  MatchExternalKvRequest match;
  match.mutable_hashes()->Add(hashes.begin(), hashes.end());
  MatchExternalKvResponse match_resp;
  s = server_->stub().MatchExternalKv(Context().get(), match, &match_resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);

  GetExternalKvHitCountsRequest hits;
  hits.mutable_hashes()->Add(hashes.begin(), hashes.end());
  GetExternalKvHitCountsResponse hits_resp;
  s = server_->stub().GetExternalKvHitCounts(Context().get(), hits, &hits_resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);

  // Refused before decoding: the worker is unknown and the tier invalid,
  // which would otherwise be FAILED_PRECONDITION or INVALID_ARGUMENT.
  ReplaceExternalKvSnapshotResponse replaced;
  s = Replace(*server_, Snapshot("nobody", "a").Tier(0, hashes), &replaced);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_THAT(s.error_message(), HasSubstr("maximum is 8388608"));

  ExpectedWorkers many;
  for (int i = 0; i < 5000; ++i) {
    many.Worker(std::to_string(i), std::string(2000, 'a'));
  }
  ASSERT_GT(many.request().ByteSizeLong(), kMaxRequestBytes);
  ConfigureExpectedWorkersResponse configured;
  s = Configure(*server_, many, &configured);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);
}

// ---------------------------------------------------------------------------
// Recovery over the wire (docs/contract.md, "Recovery"): codes, messages and
// responses. The semantics are tested against every backend in
// tests/conformance/recovery_test.cc.

TEST_F(ServiceOverReferenceBackendTest, SeedEraApplyReturnsItsSeq) {
  ApplyExternalKvBatchResponse resp;
  ASSERT_TRUE(
      Apply(*server_, Batch("w", "a").Seq(77).Report(kTierHbm, {1}), &resp)
          .ok());
  EXPECT_EQ(resp.applied_seq(), 77u);
  EXPECT_FALSE(resp.duplicate());
}

TEST_F(ServiceOverReferenceBackendTest, GatedLifecycleOverTheWire) {
  ApplyExternalKvBatchResponse applied;
  grpc::Status s = Apply(
      *server_, Batch("w", "a").Gated("e", 1).Report(kTierHbm, {1}), &applied);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(s.error_message(),
            "stream must be configured before recovery-aware apply");

  ConfigureExpectedWorkersResponse configured;
  ASSERT_TRUE(Configure(*server_,
                        ExpectedWorkers().Worker("w", "a").Worker("v", "b"),
                        &configured)
                  .ok());
  EXPECT_EQ(configured.total_workers(), 2u);
  EXPECT_EQ(configured.ready_workers(), 0u);

  s = Apply(*server_, Batch("w", "a").Gated("e", 1), &applied);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(s.error_message(),
            "stream has no READY snapshot for this generation and epoch");

  ReplaceExternalKvSnapshotResponse replaced;
  ASSERT_TRUE(
      Replace(*server_,
              Snapshot("w", "a").Epoch("e").AppliedSeq(2).Tier(kTierHbm, {1}),
              &replaced)
          .ok());
  EXPECT_EQ(replaced.applied_seq(), 2u);

  ASSERT_TRUE(Apply(*server_,
                    Batch("w", "a").Gated("e", 3).Report(kTierHbm, {2}),
                    &applied)
                  .ok());
  EXPECT_EQ(applied.applied_seq(), 3u);
  EXPECT_FALSE(applied.duplicate());
  ASSERT_TRUE(Apply(*server_, Batch("w", "a").Gated("e", 0), &applied).ok());
  EXPECT_EQ(applied.applied_seq(), 3u);
  EXPECT_TRUE(applied.duplicate());

  s = Apply(*server_, Batch("w", "a").Gated("e", 5), &applied);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(s.error_message(), "event sequence gap: expected 4, got 5");

  MatchExternalKvPrefixResponse prefix;
  ASSERT_TRUE(MatchPrefix(*server_, PrefixRequest({1, 2}), &prefix).ok());
  EXPECT_EQ(prefix.matches_size(), 0);

  ASSERT_TRUE(
      Configure(*server_, ExpectedWorkers().Worker("w", "a"), &configured)
          .ok());
  EXPECT_EQ(configured.total_workers(), 1u);
  EXPECT_EQ(configured.ready_workers(), 0u);
}

TEST_F(ServiceOverReferenceBackendTest, RecoveryValidationOverTheWire) {
  ReplaceExternalKvSnapshotResponse replaced;
  grpc::Status s = Replace(*server_, Snapshot(""), &replaced);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "worker_id must not be empty");
  s = Replace(*server_, Snapshot("w").Tier(7, {1}), &replaced);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "tier is not supported");
  s = Replace(*server_, Snapshot("w").Tier(kTierHbm, {1}), &replaced);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(s.error_message(),
            "stream must be configured before snapshot replacement");

  ConfigureExpectedWorkersResponse configured;
  ExpectedWorkers too_many;
  for (int i = 0; i < 4097; ++i) too_many.Worker(std::to_string(i));
  s = Configure(*server_, too_many, &configured);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.error_message(),
            "request contains 4097 workers; maximum is 4096");
  s = Configure(*server_, ExpectedWorkers().Worker("a").Worker("a"),
                &configured);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "duplicate worker_id a");
}

// A snapshot has no hash bound but the request size: 200,000 hashes are one
// install.
TEST_F(ServiceOverReferenceBackendTest, LargeSnapshotIsInstalled) {
  ConfigureExpectedWorkersResponse configured;
  ASSERT_TRUE(Configure(*server_, ExpectedWorkers().Worker("w", "10.0.0.1:1"),
                        &configured)
                  .ok());
  const std::vector<int64_t> hashes = Range(1, 200000);
  ReplaceExternalKvSnapshotResponse replaced;
  const grpc::Status s = Replace(
      *server_, Snapshot("w", "10.0.0.1:1").Tier(kTierHbm, hashes), &replaced);
  ASSERT_TRUE(s.ok()) << s.error_message();
  MatchExternalKvPrefixResponse prefix;
  ASSERT_TRUE(MatchPrefix(*server_, PrefixRequest(hashes), &prefix).ok());
  EXPECT_EQ(prefix.best_prefix_blocks(), 200000u);
}

// Beyond the transport ceiling the runtime itself refuses the request.
TEST_F(ServiceOverReferenceBackendTest,
       AboveTransportCeilingIsRefusedByRuntime) {
  const MatchExternalKvPrefixRequest req =
      PrefixRequest(Range(0, kTransportReceiveCeilingBytes / 8 + 1024));
  MatchExternalKvPrefixResponse resp;
  const grpc::Status s = MatchPrefix(*server_, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
}

}  // namespace
}  // namespace kvindexer
