// Line-A streams and the indexer epoch across restarts of the real
// kv-indexer-server (docs/durability.md, "The indexer epoch"; docs/contract.md,
// "Streams"): one epoch per process answered by Configure, Invalidate, Begin
// and GetStats; a new one at every start without a data directory; kept by
// a SIGKILL restart with one, and new when the checkpoints are gone; and
// namespaced, ranked streams keep their generation and committed placements
// across a SIGKILL; identical Configures write nothing to the log.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/uuid.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kvindexer_admin.grpc.pb.h"
#include "tests/e2e/durability_fixture.h"

namespace kvindexer::e2e {
namespace line_a_restart_test {
namespace {

namespace fs = std::filesystem;
namespace v1 = ::kv_indexer::v1;
namespace admin_v1 = ::kvindexer::admin::v1;

struct Stream {
  std::string ns;
  std::string worker;
  uint32_t rank = 0;
  std::string address;
  std::string generation;
};

void SetId(const Stream& s, v1::StreamId* id) {
  id->set_namespace_(s.ns);
  id->set_worker_id(s.worker);
  id->set_dp_rank(s.rank);
}

class LineARestartTest : public DurabilityTest {
 protected:
  LineARestartTest() : DurabilityTest("line-a-restart") {}

  void StartServer(bool with_data_dir = true) {
    DurableServerOptions options = options_;
    if (!with_data_dir) options.data_dir.clear();
    server_ = DurableServer::Start(options);
    ASSERT_NE(server_, nullptr);
    admin_ = admin_v1::KvIndexerAdmin::NewStub(grpc::CreateChannel(
        server_->address(), grpc::InsecureChannelCredentials()));
  }
  void KillServer() {
    server_->process().Kill();
    server_.reset();
  }

  // A line-A Configure of `streams`; returns its indexer_epoch.
  std::string Configure(const std::vector<Stream>& streams) {
    v1::ConfigureExpectedWorkersRequest req;
    for (const Stream& s : streams) {
      v1::ExpectedWorker* w = req.add_workers();
      SetId(s, w->mutable_stream_id());
      w->set_worker_address(s.address);
      w->set_worker_generation(s.generation);
    }
    v1::ConfigureExpectedWorkersResponse resp;
    const grpc::Status st =
        server_->stub().ConfigureExpectedWorkers(Deadline().get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp.indexer_epoch();
  }

  // Begin, one Append of `hashes` at HBM, Commit; returns Begin's epoch.
  std::string Install(const Stream& s, const std::vector<int64_t>& hashes,
                      uint64_t applied_seq) {
    v1::BeginExternalKvSnapshotRequest begin;
    SetId(s, begin.mutable_stream_id());
    begin.set_worker_address(s.address);
    begin.set_worker_epoch("worker-epoch-" + s.worker);
    begin.set_applied_seq(applied_seq);
    begin.mutable_metadata()->set_worker_generation(s.generation);
    begin.set_expected_placements(hashes.size());
    v1::BeginExternalKvSnapshotResponse begun;
    grpc::Status st = server_->stub().BeginExternalKvSnapshot(Deadline().get(),
                                                              begin, &begun);
    EXPECT_TRUE(st.ok()) << st.error_message();
    v1::AppendExternalKvSnapshotRequest append;
    append.set_transaction_id(begun.transaction_id());
    for (const int64_t h : hashes) {
      v1::ExternalKvSnapshotPlacement* p = append.add_placements();
      p->set_block_hash(h);
      p->set_tier(v1::TIER_HBM);
    }
    v1::AppendExternalKvSnapshotResponse appended;
    st = server_->stub().AppendExternalKvSnapshot(Deadline().get(), append,
                                                  &appended);
    EXPECT_TRUE(st.ok()) << st.error_message();
    v1::CommitExternalKvSnapshotRequest commit;
    commit.set_transaction_id(begun.transaction_id());
    v1::CommitExternalKvSnapshotResponse committed;
    st = server_->stub().CommitExternalKvSnapshot(Deadline().get(), commit,
                                                  &committed);
    EXPECT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(committed.applied_seq(), applied_seq);
    return begun.indexer_epoch();
  }

  std::string Invalidate(const Stream& s) {
    v1::InvalidateWorkerRequest req;
    SetId(s, req.mutable_stream_id());
    v1::InvalidateWorkerResponse resp;
    const grpc::Status st =
        server_->stub().InvalidateWorker(Deadline().get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp.indexer_epoch();
  }

  admin_v1::GetStatsResponse Stats() {
    admin_v1::GetStatsResponse stats;
    const grpc::Status st =
        admin_->GetStats(Deadline().get(), admin_v1::GetStatsRequest(), &stats);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return stats;
  }
  std::string StatsEpoch() { return Stats().indexer_epoch(); }

  // A coverage query over `streams` for `hashes`.
  v1::MatchExternalKvPrefixResponse Query(const std::vector<Stream>& streams,
                                          const std::vector<int64_t>& hashes) {
    v1::MatchExternalKvPrefixRequest req;
    for (const int64_t h : hashes) req.add_hashes(h);
    for (const Stream& s : streams) SetId(s, req.add_eligible_streams());
    v1::MatchExternalKvPrefixResponse resp;
    const grpc::Status st =
        server_->stub().MatchExternalKvPrefix(Deadline().get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp;
  }

  std::unique_ptr<DurableServer> server_;
  std::unique_ptr<admin_v1::KvIndexerAdmin::Stub> admin_;
};

const Stream kRank0{"ns", "w", 0, "http://10.0.0.1:30000", "gen-0"};
const Stream kRank1{"ns", "w", 1, "http://10.0.0.1:30001", "gen-1"};

TEST_F(LineARestartTest, OneEpochPerProcessAndANewOneWithoutADataDirectory) {
  StartServer(/*with_data_dir=*/false);
  const std::string epoch = Configure({kRank0, kRank1});
  EXPECT_TRUE(IsUuidText(epoch)) << epoch;
  EXPECT_EQ(Install(kRank0, {1, 2}, 5), epoch);
  EXPECT_EQ(Invalidate(kRank0), epoch);
  EXPECT_EQ(StatsEpoch(), epoch);
  KillServer();
  StartServer(/*with_data_dir=*/false);
  EXPECT_NE(StatsEpoch(), epoch);
  EXPECT_NE(Configure({kRank0}), epoch);
}

TEST_F(LineARestartTest, SigkillKeepsTheEpochAndLostCheckpointsChangeIt) {
  StartServer();
  const std::string epoch = Configure({kRank0});
  Install(kRank0, {1, 2, 3}, 9);
  KillServer();
  StartServer();
  EXPECT_EQ(StatsEpoch(), epoch);
  EXPECT_EQ(Configure({kRank0}), epoch);
  KillServer();
  for (const auto& entry : fs::directory_iterator(options_.data_dir)) {
    if (entry.path().filename().string().starts_with("checkpoint-")) {
      fs::remove(entry.path());
    }
  }
  StartServer();
  const std::string fresh = StatsEpoch();
  EXPECT_TRUE(IsUuidText(fresh)) << fresh;
  EXPECT_NE(fresh, epoch);
}

TEST_F(LineARestartTest,
       RankedStreamsKeepGenerationAndPlacementsAcrossSigkill) {
  StartServer();
  Configure({kRank0, kRank1});
  Install(kRank0, {10, 11, 12}, 3);
  Install(kRank1, {10, 11}, 4);
  const v1::MatchExternalKvPrefixResponse before =
      Query({kRank0, kRank1}, {10, 11, 12});
  KillServer();
  StartServer();
  const v1::MatchExternalKvPrefixResponse after =
      Query({kRank0, kRank1}, {10, 11, 12});
  EXPECT_EQ(after.SerializeAsString(), before.SerializeAsString())
      << "before: " << before.ShortDebugString()
      << "\nafter: " << after.ShortDebugString();
  EXPECT_TRUE(after.complete_coverage());
  ASSERT_EQ(after.coverage_size(), 2);
  for (const v1::StreamCoverage& c : after.coverage()) {
    EXPECT_TRUE(c.ready());
    EXPECT_EQ(c.worker_generation(),
              c.stream_id().dp_rank() == 0 ? "gen-0" : "gen-1");
  }
  ASSERT_EQ(after.matches_size(), 2);
  for (const v1::ExternalKvPrefixMatch& m : after.matches()) {
    EXPECT_EQ(m.stream_id().namespace_(), "ns");
    EXPECT_EQ(m.matched_prefix_blocks(),
              m.stream_id().dp_rank() == 0 ? 3u : 2u);
    EXPECT_EQ(m.worker_generation(),
              m.stream_id().dp_rank() == 0 ? "gen-0" : "gen-1");
  }
}

// F30: a bridge's once-a-second Configure of an unchanged list writes no
// log record.
TEST_F(LineARestartTest, IdenticalConfiguresLeaveTheLogAlone) {
  StartServer();
  Configure({kRank0, kRank1});
  Install(kRank0, {1, 2}, 3);
  const uint64_t before = Stats().durability().log_bytes();
  ASSERT_GT(before, 0u);
  for (int i = 0; i < 1000; ++i) Configure({kRank0, kRank1});
  EXPECT_EQ(Stats().durability().log_bytes(), before);
  // A changed list is logged.
  Configure({kRank0});
  EXPECT_GT(Stats().durability().log_bytes(), before);
}

}  // namespace
}  // namespace line_a_restart_test
}  // namespace kvindexer::e2e
