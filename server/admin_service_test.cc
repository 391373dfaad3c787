// kvindexer.admin.v1.KvIndexerAdmin in-process over 127.0.0.1, with real
// client stubs for it and for kv_indexer.v1.KVIndexer on the same port, over
// the reference backend (docs/admin-api.md).
#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/wire_vocabulary.h"
#include "core/backend_loader.h"
#include "core/indexer.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "kvindexer_admin.grpc.pb.h"
#include "server/admin_service.h"
#include "server/kv_indexer_service.h"
#include "server/write_authorizer.h"
#include "tests/support/fake_clock.h"
#include "tests/support/in_process_server.h"
#include "tests/support/requests.h"

namespace kvindexer {
namespace {

namespace v1 = ::kv_indexer::v1;
using test_support::Batch;
using test_support::ExpectedWorkers;
using test_support::PrefixRequest;
using test_support::Snapshot;
using test_support::Spec;
using ::testing::HasSubstr;

using std::chrono::milliseconds;

AdminSources Sources(OperatorView* indexer, uint32_t abi_minor,
                     const PrefixAdmission* admission,
                     const WriteAuthorizer* authorizer,
                     MonotonicClock::TimePoint started) {
  AdminSources s;
  s.indexer = indexer;
  s.backend_name = "absl_rwlock";
  s.backend_version = "test";
  s.backend_path = "/test/path.so";
  s.backend_abi_minor = abi_minor;
  s.admission = admission;
  s.prefix_query_max_inflight = 8;
  s.authorizer = authorizer;
  s.max_worker_id_bytes = RequestLimits{}.max_worker_id_bytes;
  s.server_version = "9.9.9";
  s.started = started;
  return s;
}

class AdminServer {
 public:
  AdminServer(IndexBackend* backend, uint32_t abi_minor,
              const WriteAuthorizer* authorizer = nullptr)
      : indexer_(backend, nullptr, RequestLimits{}, abi_minor, &clock_),
        service_(indexer_.operations(), 8, WallClock::Real()),
        admin_(Sources(&indexer_.operator_view(), abi_minor,
                       &service_.admission(), authorizer, clock_.Now())),
        server_(service_, admin_, std::chrono::seconds(5)) {}

  bool started() const { return server_.started(); }
  FakeMonotonicClock& clock() { return clock_; }
  Indexer& indexer() { return indexer_; }
  v1::KVIndexer::Stub& kv() { return server_.kv(); }
  admin_v1::KvIndexerAdmin::Stub& admin() { return server_.admin(); }

 private:
  FakeMonotonicClock clock_;
  Indexer indexer_;
  KvIndexerService service_;
  AdminService admin_;
  test_support::InProcessServer server_;
};

void Deadline(grpc::ClientContext& context) {
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
}

class AdminServiceTest : public ::testing::Test {
 protected:
  void Start(uint32_t abi_minor = kBackendAbiMinor,
             const WriteAuthorizer* authorizer = nullptr) {
    auto loaded =
        LoadedBackend::Load("absl_rwlock", KVINDEXER_TEST_BACKEND_DIR);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    backend_ = *std::move(loaded);
    server_ = std::make_unique<AdminServer>(backend_->backend(), abi_minor,
                                            authorizer);
    ASSERT_TRUE(server_->started());
  }
  void TearDown() override {
    server_.reset();  // before the backend it points into
    backend_.reset();
  }

  // An apply over the wire, with optional metadata.
  grpc::Status Apply(const v1::ApplyExternalKvBatchRequest& req,
                     std::optional<std::string> fidelity = std::nullopt,
                     std::optional<std::string> heartbeat = std::nullopt) {
    grpc::ClientContext context;
    Deadline(context);
    if (fidelity) context.AddMetadata("kv-indexer-fidelity", *fidelity);
    if (heartbeat) {
      context.AddMetadata("kv-indexer-heartbeat-ttl-ms", *heartbeat);
    }
    v1::ApplyExternalKvBatchResponse resp;
    return server_->kv().ApplyExternalKvBatch(&context, req, &resp);
  }

  admin_v1::ListWorkersResponse List() {
    grpc::ClientContext context;
    Deadline(context);
    admin_v1::ListWorkersResponse resp;
    const grpc::Status s = server_->admin().ListWorkers(
        &context, admin_v1::ListWorkersRequest{}, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }

  grpc::Status Explain(const admin_v1::ExplainPrefixRequest& req,
                       admin_v1::ExplainPrefixResponse* resp) {
    grpc::ClientContext context;
    Deadline(context);
    return server_->admin().ExplainPrefix(&context, req, resp);
  }

  grpc::Status Remove(const std::string& id,
                      admin_v1::RemoveWorkerResponse* resp) {
    grpc::ClientContext context;
    Deadline(context);
    admin_v1::RemoveWorkerRequest req;
    req.set_worker_id(id);
    req.set_reason("test");
    return server_->admin().RemoveWorker(&context, req, resp);
  }

  // Configures every stream of `streams` at once; those with a generation
  // get a snapshot of `hashes` at HBM in epoch "e1" and are covered, the
  // others get a seed-era apply of them and are ready but, namespaced, not
  // covered.
  struct StreamEntry {
    v1::StreamId stream;
    std::string address;
    std::string generation;
    std::vector<int64_t> hashes;
  };
  void AddStreams(const std::vector<StreamEntry>& streams) {
    IndexOperations& ops = server_->indexer().operations();
    v1::ConfigureExpectedWorkersRequest configure;
    for (const StreamEntry& e : streams) {
      v1::ExpectedWorker* w = configure.add_workers();
      *w->mutable_stream_id() = e.stream;
      w->set_worker_address(e.address);
      w->set_worker_generation(e.generation);
    }
    v1::ConfigureExpectedWorkersResponse configured;
    ASSERT_TRUE(ops.Configure(configure, &configured).Wait().ok());
    for (const StreamEntry& e : streams) {
      if (e.generation.empty()) {
        v1::ApplyExternalKvBatchRequest seed =
            Batch(e.stream.worker_id(), e.address)
                .Report(kTierHbm, e.hashes)
                .request();
        *seed.mutable_stream_id() = e.stream;
        ASSERT_TRUE(Apply(seed).ok());
        continue;
      }
      v1::ReplaceExternalKvSnapshotRequest replace;
      *replace.mutable_stream_id() = e.stream;
      replace.set_worker_address(e.address);
      replace.set_worker_epoch("e1");
      replace.set_applied_seq(1);
      replace.set_worker_generation(e.generation);
      v1::TierHashes* tier = replace.add_hashes_by_tier();
      tier->set_tier(v1::TIER_HBM);
      for (int64_t h : e.hashes) tier->add_hashes(h);
      v1::ReplaceExternalKvSnapshotResponse replaced;
      ASSERT_TRUE(ops.Replace(replace, &replaced).Wait().ok());
    }
  }

  std::unique_ptr<LoadedBackend> backend_;
  std::unique_ptr<AdminServer> server_;
};

TEST_F(AdminServiceTest, ListWorkersShowsRecordsCountsFidelityAndAges) {
  Start();
  ASSERT_TRUE(Apply(Batch("w2", "10.0.0.2:1")
                        .Report(kTierHbm, {1, 2, 3})
                        .Report(kTierSsd, {4}),
                    "exact", "5000")
                  .ok());
  server_->clock().Advance(milliseconds(1500));
  ASSERT_TRUE(Apply(Batch("w1", "10.0.0.1:1")
                        .Spec(Spec(kComponentFull, 0, kTierBitHbm))
                        .Report(kTierDram, {1}, {1}),
                    "degraded; no_history")
                  .ok());
  // A malformed value changes nothing (and is logged once).
  ASSERT_TRUE(Apply(Batch("w1", "10.0.0.1:1")
                        .Spec(Spec(kComponentFull, 0, kTierBitHbm))
                        .Report(kTierDram, {1}, {1}),
                    "perfect")
                  .ok());
  server_->clock().Advance(milliseconds(250));

  const admin_v1::ListWorkersResponse resp = List();
  ASSERT_EQ(resp.workers_size(), 2);
  const admin_v1::WorkerInfo& w1 = resp.workers(0);
  const admin_v1::WorkerInfo& w2 = resp.workers(1);
  EXPECT_EQ(w1.worker_id(), "w1");
  EXPECT_EQ(w1.worker_address(), "10.0.0.1:1");
  EXPECT_TRUE(w1.has_cache_spec());
  EXPECT_EQ(w1.fidelity(), admin_v1::FIDELITY_DEGRADED);
  EXPECT_EQ(w1.fidelity_reason(), "no_history");
  EXPECT_EQ(w1.last_apply_age_ms(), 250u);
  EXPECT_FALSE(w1.heartbeat_marked());
  EXPECT_FALSE(w1.has_last_heartbeat_age_ms());
  EXPECT_EQ(w1.sequence_state(), admin_v1::SEQUENCE_STATE_UNSEQUENCED);
  EXPECT_TRUE(w1.ready());
  EXPECT_TRUE(w1.placement_counts_known());
  ASSERT_EQ(w1.placements_size(), 1);
  EXPECT_EQ(w1.placements(0).tier(), v1::TIER_DRAM);
  EXPECT_EQ(w1.placements(0).placements(), 1u);

  EXPECT_EQ(w2.worker_id(), "w2");
  EXPECT_FALSE(w2.has_cache_spec());
  EXPECT_EQ(w2.fidelity(), admin_v1::FIDELITY_EXACT);
  EXPECT_EQ(w2.last_apply_age_ms(), 1750u);
  EXPECT_TRUE(w2.heartbeat_marked());
  EXPECT_EQ(w2.heartbeat_ttl_ms(), 5000u);
  EXPECT_EQ(w2.last_heartbeat_age_ms(), 1750u);
  EXPECT_EQ(w2.heartbeat_deadline_in_ms(), 5000 - 1750);
  ASSERT_EQ(w2.placements_size(), 2);
  EXPECT_EQ(w2.placements(0).tier(), v1::TIER_HBM);
  EXPECT_EQ(w2.placements(0).placements(), 3u);
  EXPECT_EQ(w2.placements(1).tier(), v1::TIER_SSD);
  EXPECT_EQ(w2.placements(1).placements(), 1u);
}

TEST_F(AdminServiceTest, ListWorkersPagesByIdWithATokenToResumeFrom) {
  Start();
  // Ten workers, applied out of order; one id beyond ASCII.
  const std::vector<std::string> ids = {"w7", "w1", "w9",        "w0", "w4",
                                        "w2", "w8", "w\xc3\xa9", "w5", "w3"};
  for (const std::string& id : ids) {
    ASSERT_TRUE(Apply(Batch(id, "a").Report(kTierHbm, {1})).ok());
  }
  std::vector<std::string> seen;
  admin_v1::ListWorkersRequest req;
  req.set_page_size(4);
  int pages = 0;
  for (; pages < 10; ++pages) {
    grpc::ClientContext context;
    Deadline(context);
    admin_v1::ListWorkersResponse resp;
    const grpc::Status s = server_->admin().ListWorkers(&context, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_LE(resp.workers_size(), 4);
    for (const auto& w : resp.workers()) seen.push_back(w.worker_id());
    if (resp.next_page_token().empty()) break;
    req.set_page_token(resp.next_page_token());
  }
  EXPECT_EQ(pages, 2);  // 4 + 4 + 2
  std::vector<std::string> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(seen, sorted);

  // A page that ends exactly at the last worker says no more follow.
  req.Clear();
  req.set_page_size(10);
  {
    grpc::ClientContext context;
    Deadline(context);
    admin_v1::ListWorkersResponse resp;
    ASSERT_TRUE(server_->admin().ListWorkers(&context, req, &resp).ok());
    EXPECT_EQ(resp.workers_size(), 10);
    EXPECT_EQ(resp.next_page_token(), "");
  }
  // No page size: the server's default, which holds all ten.
  EXPECT_EQ(List().workers_size(), 10);
}

TEST_F(AdminServiceTest, ListWorkersPagesStreamsInKeyOrder) {
  Start();
  AddStreams({{test_support::StreamIdOf("x", "a", 0), "x", "g", {1}},
              {test_support::StreamIdOf("ns", "b", 5), "b5", "g", {1}},
              {test_support::StreamIdOf("", "b", 1), "b1", "g", {1}},
              {test_support::StreamIdOf("ns", "a", 0), "na", "g", {1}},
              {test_support::StreamIdOf("ns", "b", 0), "nb", "", {1}}});
  for (const std::string id : {"c", "a", "b"}) {
    ASSERT_TRUE(Apply(Batch(id, id).Report(kTierHbm, {1})).ok());
  }
  // Bytewise by namespace, worker id and rank: the legacy streams among
  // the others of the empty namespace.
  const std::vector<std::string> want = {"/a/0",   "/b/0",   "/b/1",   "/c/0",
                                         "ns/a/0", "ns/b/0", "ns/b/5", "x/a/0"};
  std::vector<std::string> seen;
  admin_v1::ListWorkersRequest req;
  req.set_page_size(3);
  int pages = 1;
  for (; pages <= 10; ++pages) {
    grpc::ClientContext context;
    Deadline(context);
    admin_v1::ListWorkersResponse resp;
    const grpc::Status s = server_->admin().ListWorkers(&context, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_LE(resp.workers_size(), 3);
    for (const auto& w : resp.workers()) {
      seen.push_back(
          fmt::format("{}/{}/{}", w.namespace_(), w.worker_id(), w.dp_rank()));
    }
    if (resp.next_page_token().empty()) break;
    req.set_page_token(resp.next_page_token());
  }
  EXPECT_EQ(pages, 3);  // 3 + 3 + 2
  EXPECT_EQ(seen, want);
  // Without a page size: the same order in one page.
  seen.clear();
  const admin_v1::ListWorkersResponse all = List();
  for (const auto& w : all.workers()) {
    seen.push_back(
        fmt::format("{}/{}/{}", w.namespace_(), w.worker_id(), w.dp_rank()));
  }
  EXPECT_EQ(seen, want);
}

TEST_F(AdminServiceTest, ListWorkersRefusesABadTokenOrAHugePage) {
  Start();
  for (const char* token : {"x", "w1.", "w1.abc", "w1.zz", "W1.00"}) {
    admin_v1::ListWorkersRequest req;
    req.set_page_token(token);
    grpc::ClientContext context;
    Deadline(context);
    admin_v1::ListWorkersResponse resp;
    const grpc::Status s = server_->admin().ListWorkers(&context, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << token;
    EXPECT_THAT(s.error_message(), HasSubstr("page_token")) << token;
  }
  admin_v1::ListWorkersRequest req;
  req.set_page_size(10001);
  grpc::ClientContext context;
  Deadline(context);
  admin_v1::ListWorkersResponse resp;
  const grpc::Status s = server_->admin().ListWorkers(&context, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("page_size is 10001; maximum is 10000"));
}

TEST_F(AdminServiceTest, ConfiguredAndSequencedWorkers) {
  Start();
  {
    grpc::ClientContext context;
    Deadline(context);
    v1::ConfigureExpectedWorkersResponse resp;
    ASSERT_TRUE(
        server_->kv()
            .ConfigureExpectedWorkers(
                &context, ExpectedWorkers().Worker("w", "a").request(), &resp)
            .ok());
  }
  admin_v1::ListWorkersResponse resp = List();
  ASSERT_EQ(resp.workers_size(), 1);
  EXPECT_TRUE(resp.workers(0).configured());
  EXPECT_EQ(resp.workers(0).sequence_state(), admin_v1::SEQUENCE_STATE_INVALID);
  EXPECT_EQ(resp.workers(0).last_apply_age_ms(), 0u);  // configure counts
  EXPECT_TRUE(resp.workers(0).has_last_apply_age_ms());
  {
    grpc::ClientContext context;
    Deadline(context);
    context.AddMetadata("kv-indexer-fidelity", "exact");
    v1::ReplaceExternalKvSnapshotResponse r;
    ASSERT_TRUE(server_->kv()
                    .ReplaceExternalKvSnapshot(
                        &context,
                        Snapshot("w", "a").Epoch("e1").AppliedSeq(7).Tier(
                            kTierHbm, {1, 2}),
                        &r)
                    .ok());
  }
  resp = List();
  EXPECT_EQ(resp.workers(0).sequence_state(),
            admin_v1::SEQUENCE_STATE_SEQUENCED);
  EXPECT_EQ(resp.workers(0).worker_epoch(), "e1");
  EXPECT_EQ(resp.workers(0).applied_seq(), 7u);
  EXPECT_EQ(resp.workers(0).fidelity(), admin_v1::FIDELITY_EXACT);
}

TEST_F(AdminServiceTest, AnOlderBackendHasNoPlacementCounts) {
  Start(/*abi_minor=*/1);
  ASSERT_TRUE(Apply(Batch("w", "a").Report(kTierHbm, {1})).ok());
  const admin_v1::ListWorkersResponse resp = List();
  ASSERT_EQ(resp.workers_size(), 1);
  EXPECT_FALSE(resp.workers(0).placement_counts_known());
  EXPECT_EQ(resp.workers(0).placements_size(), 0);
  EXPECT_EQ(resp.workers(0).fidelity(), admin_v1::FIDELITY_UNKNOWN);
}

TEST_F(AdminServiceTest, ExplainPrefixAnswersAsMatchExternalKvPrefix) {
  Start();
  ASSERT_TRUE(Apply(Batch("w1", "a1").Report(kTierHbm, {1, 2, 3})).ok());
  ASSERT_TRUE(
      Apply(Batch("w2", "a2").Report(kTierHbm, {1}).Report(kTierDram, {3}, {1}))
          .ok());
  ASSERT_TRUE(Apply(Batch("w3", "a3").Report(kTierHbm, {2})).ok());
  admin_v1::ExplainPrefixRequest req;
  for (int64_t h : {1, 2, 3, 4}) req.add_hashes(h);
  req.add_worker_ids("w3");
  req.add_worker_ids("ghost");
  admin_v1::ExplainPrefixResponse resp;
  const grpc::Status s = Explain(req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();

  v1::MatchExternalKvPrefixResponse production;
  {
    grpc::ClientContext context;
    Deadline(context);
    ASSERT_TRUE(server_->kv()
                    .MatchExternalKvPrefix(
                        &context, PrefixRequest({1, 2, 3, 4}), &production)
                    .ok());
  }
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(resp.answer(),
                                                                 production))
      << resp.answer().DebugString();
  ASSERT_EQ(resp.workers_size(), 4);
  EXPECT_EQ(resp.workers(0).worker_id(), "w1");
  EXPECT_EQ(resp.workers(0).matched_prefix_blocks(), 3u);
  EXPECT_EQ(resp.workers(0).stop_reason(), admin_v1::STOP_REASON_BLOCK_MISSING);
  EXPECT_EQ(resp.workers(0).stop_block(), 3u);
  EXPECT_EQ(resp.workers(0).rule(), "legacy");
  EXPECT_TRUE(resp.workers(0).has_last_apply_age_ms());
  EXPECT_EQ(resp.workers(1).worker_id(), "w2");
  EXPECT_EQ(resp.workers(1).stop_reason(), admin_v1::STOP_REASON_FAIL_CLOSED);
  EXPECT_TRUE(resp.workers(1).excluded());
  EXPECT_EQ(resp.workers(2).worker_id(), "w3");
  EXPECT_EQ(resp.workers(2).stop_reason(), admin_v1::STOP_REASON_NOT_CANDIDATE);
  EXPECT_EQ(resp.workers(3).worker_id(), "ghost");
  EXPECT_EQ(resp.workers(3).stop_reason(),
            admin_v1::STOP_REASON_UNKNOWN_WORKER);
}

TEST_F(AdminServiceTest, ExplainPrefixValidatesAsThePrefixQuery) {
  Start();
  admin_v1::ExplainPrefixResponse resp;
  admin_v1::ExplainPrefixRequest empty;
  grpc::Status s = Explain(empty, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "hashes must not be empty");

  admin_v1::ExplainPrefixRequest bad_id;
  bad_id.add_hashes(1);
  bad_id.add_worker_ids("");
  s = Explain(bad_id, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  admin_v1::ExplainPrefixRequest long_id;
  long_id.add_hashes(1);
  long_id.add_worker_ids(
      std::string(RequestLimits{}.max_worker_id_bytes + 1, 'x'));
  s = Explain(long_id, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(AdminServiceTest, RemoveWorkerCodesAndCounts) {
  Start();
  ASSERT_TRUE(
      Apply(Batch("w", "a").Report(kTierHbm, {1, 2}).Report(kTierDram, {3}))
          .ok());
  admin_v1::RemoveWorkerResponse resp;
  EXPECT_EQ(Remove("", &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(
      Remove(std::string(RequestLimits{}.max_worker_id_bytes + 1, 'x'), &resp)
          .error_code(),
      grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Remove("nobody", &resp).error_code(), grpc::StatusCode::NOT_FOUND);

  const grpc::Status s = Remove("w", &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.removed_placements_size(), 2);
  EXPECT_EQ(resp.removed_placements(0).tier(), v1::TIER_HBM);
  EXPECT_EQ(resp.removed_placements(0).placements(), 2u);
  EXPECT_EQ(resp.removed_placements(1).tier(), v1::TIER_DRAM);
  EXPECT_EQ(resp.removed_placements(1).placements(), 1u);
  EXPECT_EQ(List().workers_size(), 0);
  EXPECT_EQ(Remove("w", &resp).error_code(), grpc::StatusCode::NOT_FOUND);
}

// The write token is checked before anything else, the id included. The
// placeholder WriteAuthorizer (before the security work is merged) allows
// every call, so the test can only run against the real one.
TEST_F(AdminServiceTest, RemoveWorkerChecksTheWriteTokenFirst) {
  const WriteAuthorizer authorizer("s3cret");
  {
    grpc::ServerContext probe;
    if (authorizer.Check(probe, "probe").ok()) {
      GTEST_SKIP() << "WriteAuthorizer is the allow-all placeholder";
    }
  }
  Start(kBackendAbiMinor, &authorizer);
  ASSERT_TRUE(Apply(Batch("w", "a").Report(kTierHbm, {1})).ok());
  admin_v1::RemoveWorkerResponse resp;
  EXPECT_EQ(Remove("", &resp).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Remove("w", &resp).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(List().workers_size(), 1);
}

TEST_F(AdminServiceTest, GetStatsReportsBackendWorkersAndAdmission) {
  Start();
  ASSERT_TRUE(
      Apply(Batch("w1", "a").Report(kTierHbm, {1, 2}), "exact", "1000").ok());
  ASSERT_TRUE(Apply(Batch("w2", "b").Report(kTierHbm, {2})).ok());
  server_->clock().Advance(milliseconds(42));
  grpc::ClientContext context;
  Deadline(context);
  admin_v1::GetStatsResponse resp;
  const grpc::Status s =
      server_->admin().GetStats(&context, admin_v1::GetStatsRequest{}, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.server_version(), "9.9.9");
  EXPECT_EQ(resp.uptime_ms(), 42u);
  EXPECT_EQ(resp.backend().name(), "absl_rwlock");
  EXPECT_EQ(resp.backend().abi_minor(), kBackendAbiMinor);
  EXPECT_EQ(resp.backend().blocks(), 2u);
  EXPECT_EQ(resp.backend().placements(), 3u);
  EXPECT_EQ(resp.backend().workers(), 2u);
  EXPECT_TRUE(resp.backend().healthy());
  EXPECT_EQ(resp.workers_total(), 2u);
  EXPECT_EQ(resp.workers_ready(), 2u);
  EXPECT_EQ(resp.workers_sequenced(), 0u);
  EXPECT_EQ(resp.workers_heartbeating(), 1u);
  EXPECT_EQ(resp.prefix_query_max_inflight(), 8u);
  EXPECT_EQ(resp.prefix_queries_inflight(), 0u);
  EXPECT_FALSE(resp.durability().enabled());
  EXPECT_EQ(resp.health(), "SERVING");
}

TEST_F(AdminServiceTest, GetStatsAndListWorkersShowOpenStaging) {
  Start();
  IndexOperations& ops = server_->indexer().operations();
  v1::ConfigureExpectedWorkersResponse configured;
  ASSERT_TRUE(ops.Configure(ExpectedWorkers().Worker("w", "a"), &configured)
                  .Wait()
                  .ok());
  v1::BeginExternalKvSnapshotRequest begin;
  begin.mutable_stream_id()->set_worker_id("w");
  begin.mutable_metadata();
  begin.set_expected_placements(5);
  v1::BeginExternalKvSnapshotResponse begun;
  ASSERT_TRUE(ops.Begin(begin, &begun).Wait().ok());
  v1::AppendExternalKvSnapshotRequest append;
  append.set_transaction_id(begun.transaction_id());
  for (int64_t hash : {1, 2}) {
    v1::ExternalKvSnapshotPlacement* p = append.add_placements();
    p->set_block_hash(hash);
    p->set_tier(v1::TIER_HBM);
  }
  v1::AppendExternalKvSnapshotResponse appended;
  ASSERT_TRUE(ops.Append(append, &appended).Wait().ok());

  grpc::ClientContext context;
  Deadline(context);
  admin_v1::GetStatsResponse stats;
  ASSERT_TRUE(server_->admin()
                  .GetStats(&context, admin_v1::GetStatsRequest{}, &stats)
                  .ok());
  EXPECT_EQ(stats.indexer_epoch(), ops.IndexerEpoch());
  EXPECT_EQ(stats.indexer_epoch(), begun.indexer_epoch());
  EXPECT_EQ(stats.staging_transactions(), 1u);
  EXPECT_EQ(stats.staged_placements(), 2u);
  admin_v1::ListWorkersResponse listed = List();
  ASSERT_EQ(listed.workers_size(), 1);
  ASSERT_TRUE(listed.workers(0).has_staged_placements());
  EXPECT_EQ(listed.workers(0).staged_placements(), 2u);
  EXPECT_EQ(listed.workers(0).placements_size(), 0);

  v1::AbortExternalKvSnapshotRequest abort;
  abort.set_transaction_id(begun.transaction_id());
  v1::AbortExternalKvSnapshotResponse aborted;
  ASSERT_TRUE(ops.Abort(abort, &aborted).Wait().ok());
  listed = List();
  ASSERT_EQ(listed.workers_size(), 1);
  EXPECT_FALSE(listed.workers(0).has_staged_placements());
}

TEST_F(AdminServiceTest, ExplainPrefixSelectsStreamsAsTheCoverageQuery) {
  Start();
  AddStreams({{test_support::StreamIdOf("ns", "w", 0), "a", "g0", {1, 2}},
              {test_support::StreamIdOf("ns", "w", 1), "b", "g1", {1, 2}},
              {test_support::StreamIdOf("ns", "w", 2), "c", "", {1, 2}}});
  ASSERT_TRUE(Apply(Batch("w", "l").Report(kTierHbm, {1})).ok());
  admin_v1::ExplainPrefixRequest req;
  for (int64_t h : {1, 2}) req.add_hashes(h);
  req.add_eligible_worker_addresses("a");
  req.add_eligible_worker_addresses("c");
  req.add_worker_ids("w");  // every stream with that id
  *req.add_streams() = test_support::StreamIdOf("ns", "v", 0);
  admin_v1::ExplainPrefixResponse resp;
  const grpc::Status s = Explain(req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();

  v1::MatchExternalKvPrefixRequest query = PrefixRequest({1, 2});
  query.add_eligible_worker_addresses("a");
  query.add_eligible_worker_addresses("c");
  v1::MatchExternalKvPrefixResponse production;
  {
    grpc::ClientContext context;
    Deadline(context);
    ASSERT_TRUE(
        server_->kv().MatchExternalKvPrefix(&context, query, &production).ok());
  }
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(resp.answer(),
                                                                 production))
      << resp.answer().DebugString() << "\nvs\n"
      << production.DebugString();
  ASSERT_EQ(production.matches_size(), 1);

  // The candidate, then every stream of "w" in key order, then the named
  // stream.
  ASSERT_EQ(resp.workers_size(), 5) << resp.DebugString();
  const auto& candidate = resp.workers(0);
  EXPECT_EQ(candidate.stream_id().namespace_(), "ns");
  EXPECT_EQ(candidate.stream_id().dp_rank(), 0u);
  EXPECT_EQ(candidate.stop_reason(), admin_v1::STOP_REASON_WINDOW_END);
  EXPECT_EQ(candidate.worker_generation(), "g0");
  const auto& legacy = resp.workers(1);
  EXPECT_EQ(legacy.worker_id(), "w");
  EXPECT_FALSE(legacy.has_stream_id());
  EXPECT_EQ(legacy.stop_reason(), admin_v1::STOP_REASON_NOT_SELECTED);
  EXPECT_EQ(resp.workers(2).stream_id().dp_rank(), 1u);
  EXPECT_EQ(resp.workers(2).stop_reason(), admin_v1::STOP_REASON_NOT_SELECTED);
  EXPECT_EQ(resp.workers(3).stream_id().dp_rank(), 2u);
  EXPECT_EQ(resp.workers(3).stop_reason(), admin_v1::STOP_REASON_NOT_READY);
  EXPECT_TRUE(resp.workers(3).excluded());
  EXPECT_EQ(resp.workers(4).stream_id().worker_id(), "v");
  EXPECT_EQ(resp.workers(4).stop_reason(),
            admin_v1::STOP_REASON_UNKNOWN_WORKER);
}

TEST_F(AdminServiceTest, ExplainPrefixChecksTheStreamsItNames) {
  Start();
  admin_v1::ExplainPrefixRequest req;
  req.add_hashes(1);
  *req.add_streams() = test_support::StreamIdOf("ns", "", 0);
  admin_v1::ExplainPrefixResponse resp;
  grpc::Status s = Explain(req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "worker_id must not be empty");
  req.clear_streams();
  for (int i = 0; i <= kMaxExplainedWorkerIds; ++i) {
    *req.add_streams() =
        test_support::StreamIdOf("ns", "w", static_cast<uint32_t>(i));
  }
  s = Explain(req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("streams; maximum is 1024"));
}

TEST_F(AdminServiceTest, RemoveWorkerByStreamRemovesThatStreamOnly) {
  Start();
  AddStreams({{test_support::StreamIdOf("ns", "w", 0), "a", "g0", {1, 2}},
              {test_support::StreamIdOf("ns", "w", 1), "b", "g1", {1}}});
  ASSERT_TRUE(Apply(Batch("w", "l").Report(kTierHbm, {1, 2, 3})).ok());
  ASSERT_EQ(List().workers_size(), 3);

  // With stream_id: that stream and nothing else.
  {
    grpc::ClientContext context;
    Deadline(context);
    admin_v1::RemoveWorkerRequest req;
    *req.mutable_stream_id() = test_support::StreamIdOf("ns", "w", 1);
    req.set_reason("test");
    admin_v1::RemoveWorkerResponse resp;
    const grpc::Status s = server_->admin().RemoveWorker(&context, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(resp.removed_placements_size(), 1);
    EXPECT_EQ(resp.removed_placements(0).placements(), 1u);
  }
  admin_v1::ListWorkersResponse listed = List();
  ASSERT_EQ(listed.workers_size(), 2);
  for (const auto& w : listed.workers()) EXPECT_EQ(w.dp_rank(), 0u);
  // Removing it again: it has no record.
  {
    grpc::ClientContext context;
    Deadline(context);
    admin_v1::RemoveWorkerRequest req;
    *req.mutable_stream_id() = test_support::StreamIdOf("ns", "w", 1);
    admin_v1::RemoveWorkerResponse resp;
    EXPECT_EQ(server_->admin().RemoveWorker(&context, req, &resp).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }

  // Without stream_id: the legacy stream, as a seed-era call; the
  // namespaced stream of the same worker id stays.
  admin_v1::RemoveWorkerResponse removed;
  ASSERT_TRUE(Remove("w", &removed).ok());
  ASSERT_EQ(removed.removed_placements_size(), 1);
  EXPECT_EQ(removed.removed_placements(0).placements(), 3u);
  listed = List();
  ASSERT_EQ(listed.workers_size(), 1);
  EXPECT_EQ(listed.workers(0).namespace_(), "ns");
  EXPECT_EQ(listed.workers(0).worker_id(), "w");
  EXPECT_EQ(Remove("w", &removed).error_code(), grpc::StatusCode::NOT_FOUND);

  // The remaining stream still answers a coverage query.
  v1::MatchExternalKvPrefixRequest query = PrefixRequest({1, 2});
  query.add_eligible_worker_addresses("a");
  v1::MatchExternalKvPrefixResponse production;
  grpc::ClientContext context;
  Deadline(context);
  ASSERT_TRUE(
      server_->kv().MatchExternalKvPrefix(&context, query, &production).ok());
  ASSERT_EQ(production.matches_size(), 1);
  EXPECT_EQ(production.matches(0).matched_prefix_blocks(), 2u);
}

}  // namespace
}  // namespace kvindexer
