// The staged snapshot calls over the wire: an in-process gRPC server on
// 127.0.0.1 over the reference backend plugin, called through the generated
// stub and, for raw bytes, a generic stub.
#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/backend_loader.h"
#include "core/indexer.h"
#include "core/stream_key.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "server/kv_indexer_service.h"
#include "server/transport_settings.h"
#include "tests/support/evicted_trailer.h"

#ifndef KVINDEXER_TEST_BACKEND_DIR
#error "KVINDEXER_TEST_BACKEND_DIR must name the directory of backend plugins"
#endif

namespace kvindexer {
// Named, not anonymous: the unity build joins test files.
namespace staging_service_test {

using namespace std::chrono_literals;
namespace v1 = ::kv_indexer::v1;

// Bound on every wait in this file.
constexpr auto kWaitBound = 10s;

using test_support::CarriesEvictedTrailer;

class StagingServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loaded =
        LoadedBackend::Load("absl_rwlock", KVINDEXER_TEST_BACKEND_DIR);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    backend_ = *std::move(loaded);
    indexer_ = std::make_unique<Indexer>(backend_->backend(), nullptr, limits_,
                                         backend_->abi_minor());
    service_ = std::make_unique<KvIndexerService>(indexer_->operations(), 8,
                                                  WallClock::Real());
    grpc::ServerBuilder builder;
    ApplyTransportSettings(builder);
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port_, 0);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                   grpc::InsecureChannelCredentials());
    stub_ = v1::KVIndexer::NewStub(channel_);
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
    server_.reset();
    service_.reset();
    indexer_.reset();
    backend_.reset();
  }

  static std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + kWaitBound);
    return context;
  }

  // Calls `method` with raw request bytes.
  grpc::Status RawCall(const std::string& method, const std::string& bytes) {
    grpc::GenericStub stub(channel_);
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    auto context = Context();
    std::promise<grpc::Status> done;
    stub.UnaryCall(
        context.get(), method, grpc::StubOptions(), &request, &response,
        [&done](grpc::Status status) { done.set_value(std::move(status)); });
    return done.get_future().get();  // the context's deadline bounds it
  }

  using Placements = std::vector<std::pair<int64_t, v1::TierType>>;

  void ConfigureStream(const StreamKey& key) {
    v1::ConfigureExpectedWorkersRequest configure;
    v1::ExpectedWorker* worker = configure.add_workers();
    SetStreamId(key, worker->mutable_stream_id());
    worker->set_worker_address("10.0.0.1:9000");
    v1::ConfigureExpectedWorkersResponse configured;
    ASSERT_TRUE(
        stub_->ConfigureExpectedWorkers(Context().get(), configure, &configured)
            .ok());
  }
  // Begins a snapshot of `expected` placements at seq 7.
  v1::BeginExternalKvSnapshotResponse Begin(const StreamKey& key,
                                            uint64_t expected) {
    v1::BeginExternalKvSnapshotRequest begin;
    SetStreamId(key, begin.mutable_stream_id());
    begin.set_worker_address("10.0.0.1:9000");
    begin.set_worker_epoch("e1");
    begin.set_applied_seq(7);
    begin.mutable_metadata()->set_worker_generation("g1");
    begin.set_expected_placements(expected);
    v1::BeginExternalKvSnapshotResponse begun;
    const grpc::Status status =
        stub_->BeginExternalKvSnapshot(Context().get(), begin, &begun);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return begun;
  }
  // Stages `placements` two per Append.
  void AppendAll(const std::string& transaction_id,
                 const Placements& placements) {
    for (size_t first = 0; first < placements.size(); first += 2) {
      v1::AppendExternalKvSnapshotRequest append;
      append.set_transaction_id(transaction_id);
      for (size_t i = first; i < std::min(first + 2, placements.size()); ++i) {
        v1::ExternalKvSnapshotPlacement* p = append.add_placements();
        p->set_block_hash(placements[i].first);
        p->set_tier(placements[i].second);
      }
      v1::AppendExternalKvSnapshotResponse appended;
      ASSERT_TRUE(
          stub_->AppendExternalKvSnapshot(Context().get(), append, &appended)
              .ok());
      EXPECT_EQ(appended.staged_placements(),
                std::min(first + 2, placements.size()));
    }
  }

  // Commits `transaction_id`, expecting OK; answers the call's context,
  // whose trailing metadata the caller may read.
  std::unique_ptr<grpc::ClientContext> Commit(
      const std::string& transaction_id,
      v1::CommitExternalKvSnapshotResponse* committed) {
    v1::CommitExternalKvSnapshotRequest commit;
    commit.set_transaction_id(transaction_id);
    std::unique_ptr<grpc::ClientContext> context = Context();
    const grpc::Status status =
        stub_->CommitExternalKvSnapshot(context.get(), commit, committed);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return context;
  }

  RequestLimits limits_;  // set before SetUp
  std::unique_ptr<LoadedBackend> backend_;
  std::unique_ptr<Indexer> indexer_;
  std::unique_ptr<KvIndexerService> service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::KVIndexer::Stub> stub_;
};

// F2: the four paths are served, each with its own first check.
TEST_F(StagingServiceTest, PathsAreServed) {
  const std::string prefix = "/kv_indexer.v1.KVIndexer/";
  EXPECT_EQ(RawCall(prefix + "BeginExternalKvSnapshot", "").error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(RawCall(prefix + "AppendExternalKvSnapshot", "").error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(RawCall(prefix + "CommitExternalKvSnapshot", "").error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(RawCall(prefix + "AbortExternalKvSnapshot", "").ok());
}

TEST_F(StagingServiceTest, BeginAppendCommitThenMatch) {
  const StreamKey key{"ns", "w", 0};
  ConfigureStream(key);
  const v1::BeginExternalKvSnapshotResponse begun = Begin(key, 3);
  EXPECT_EQ(begun.transaction_id().size(), 36u);
  EXPECT_EQ(begun.indexer_epoch(), indexer_->operations().IndexerEpoch());
  const Placements placements = {
      {11, v1::TIER_HBM}, {12, v1::TIER_HBM}, {13, v1::TIER_DRAM}};
  AppendAll(begun.transaction_id(), placements);

  // Nothing staged is visible yet.
  v1::MatchExternalKvRequest match;
  for (const auto& p : placements) match.add_hashes(p.first);
  v1::MatchExternalKvResponse before;
  ASSERT_TRUE(stub_->MatchExternalKv(Context().get(), match, &before).ok());
  EXPECT_EQ(before.matches_size(), 0);

  v1::CommitExternalKvSnapshotResponse committed;
  const std::unique_ptr<grpc::ClientContext> context =
      Commit(begun.transaction_id(), &committed);
  EXPECT_EQ(committed.applied_seq(), 7u);
  EXPECT_FALSE(CarriesEvictedTrailer(*context));

  v1::MatchExternalKvResponse after;
  ASSERT_TRUE(stub_->MatchExternalKv(Context().get(), match, &after).ok());
  ASSERT_EQ(after.matches_size(), 1);
  EXPECT_EQ(after.matches(0).address(), "10.0.0.1:9000");
  std::vector<std::pair<int64_t, int>> held;
  for (const v1::TierHashes& t : after.matches(0).hashes_by_tier()) {
    for (const int64_t h : t.hashes()) held.emplace_back(h, t.tier());
  }
  std::sort(held.begin(), held.end());
  EXPECT_EQ(held,
            (std::vector<std::pair<int64_t, int>>{
                {11, v1::TIER_HBM}, {12, v1::TIER_HBM}, {13, v1::TIER_DRAM}}));
}

// A commit the stream's placement bound evicts as it installs says so in
// its trailing metadata, as an apply or a Replace would, so that the bridge
// learns at once rather than at its next probe.
class BoundedStagingServiceTest : public StagingServiceTest {
 protected:
  BoundedStagingServiceTest() {
    limits_.placement_bound = {.max_placements = 0, .max_per_worker = 2};
  }
};

TEST_F(BoundedStagingServiceTest, ACommitPastTheBoundCarriesTheTrailer) {
  const StreamKey key{"ns", "w", 0};
  ConfigureStream(key);
  const v1::BeginExternalKvSnapshotResponse begun = Begin(key, 3);
  AppendAll(begun.transaction_id(),
            {{11, v1::TIER_HBM}, {12, v1::TIER_HBM}, {13, v1::TIER_DRAM}});
  v1::CommitExternalKvSnapshotResponse committed;
  EXPECT_TRUE(
      CarriesEvictedTrailer(*Commit(begun.transaction_id(), &committed)));
}

}  // namespace staging_service_test
}  // namespace kvindexer
