// Log records handed to an Indexer (replica/record_applier.h): the same
// outcome as the gRPC call they stand for (configurations, invalidations and
// staged snapshot commits included), and undecodable or misfiled ones
// skipped without changing anything.
#include "replica/record_applier.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/mutation_log.h"
#include "core/stream_key.h"
#include "kv_indexer_state.pb.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"

namespace kvindexer::replica {
namespace record_applier_test {

using test_support::Batch;
using test_support::MatchRequest;
using test_support::ModelBackend;
using test_support::Snapshot;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

fleet::LoggedRecord Logged(uint64_t position, std::string worker,
                           const ::kvindexer::fleet::v1::LogRecord& record) {
  return fleet::LoggedRecord{position, std::move(worker),
                             record.SerializeAsString()};
}

::kvindexer::fleet::v1::LogRecord ApplyRecord(
    const ::kv_indexer::v1::ApplyExternalKvBatchRequest& req) {
  ::kvindexer::fleet::v1::LogRecord record;
  *record.mutable_apply() = req;
  record.set_producer("bridge-a");
  return record;
}

class RecordApplierTest : public ::testing::Test {
 protected:
  // What a gated bridge sends first: a seed-era apply without actions,
  // which creates the worker record the gated calls need.
  void Register(const std::string& worker, uint64_t position) {
    const RecordResult result = ApplyLogRecord(
        indexer_, Logged(position, worker, ApplyRecord(Batch(worker, "a:1"))));
    ASSERT_EQ(result.outcome, RecordOutcome::kApplied) << result.status;
  }

  std::set<std::string> Holders(std::vector<int64_t> hashes) {
    ::kv_indexer::v1::MatchExternalKvResponse resp;
    const absl::Status s = ops_.Match(MatchRequest(hashes), &resp);
    EXPECT_TRUE(s.ok()) << s;
    std::set<std::string> out;
    for (const auto& match : resp.matches()) out.insert(match.worker_id());
    return out;
  }

  ModelBackend backend_;
  Indexer indexer_{&backend_};
  IndexOperations& ops_ = indexer_.operations();
  OperatorView& view_ = indexer_.operator_view();
};

TEST_F(RecordApplierTest, AnApplyTakesEffect) {
  const RecordResult result = ApplyLogRecord(
      indexer_,
      Logged(1, "w1",
             ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {7}))));
  EXPECT_EQ(result.outcome, RecordOutcome::kApplied) << result.status;
  EXPECT_THAT(Holders({7}), UnorderedElementsAre("w1"));
}

TEST_F(RecordApplierTest, AGateRefusalIsReportedAsRefused) {
  Register("w1", 1);
  // A gated apply before any snapshot install: refused at the gate with
  // the same FAILED_PRECONDITION as over gRPC, and nothing applied.
  const RecordResult refused = ApplyLogRecord(
      indexer_,
      Logged(2, "w1",
             ApplyRecord(
                 Batch("w1", "a:1").Gated("e1", 1).Report(kTierHbm, {8}))));
  EXPECT_EQ(refused.outcome, RecordOutcome::kRefused);
  EXPECT_EQ(refused.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Holders({8}).empty());
}

TEST_F(RecordApplierTest, ASnapshotInstallTakesEffect) {
  Register("w2", 1);
  ::kvindexer::fleet::v1::LogRecord record;
  *record.mutable_replace() = Snapshot("w2", "10.0.0.2:1")
                                  .Epoch("e")
                                  .AppliedSeq(4)
                                  .Tier(kTierHbm, {5, 6});
  const RecordResult result = ApplyLogRecord(indexer_, Logged(1, "w2", record));
  EXPECT_EQ(result.outcome, RecordOutcome::kApplied) << result.status;
  EXPECT_THAT(Holders({5}), UnorderedElementsAre("w2"));
}

TEST_F(RecordApplierTest, AHeartbeatMarksTheWorker) {
  ::kvindexer::fleet::v1::LogRecord record =
      ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {7}));
  record.set_heartbeat_ttl_ms(5000);
  ASSERT_EQ(ApplyLogRecord(indexer_, Logged(1, "w1", record)).outcome,
            RecordOutcome::kApplied);
  EXPECT_TRUE(view_.HeartbeatDeadline("w1").has_value());
}

TEST_F(RecordApplierTest, UndecodableRecordsChangeNothing) {
  const RecordResult garbage =
      ApplyLogRecord(indexer_, fleet::LoggedRecord{1, "w1", "\xff\xff\xff"});
  EXPECT_EQ(garbage.outcome, RecordOutcome::kUndecodable);
  EXPECT_THAT(garbage.status.message(), HasSubstr("record 1"));

  const RecordResult empty = ApplyLogRecord(
      indexer_, Logged(2, "w1", ::kvindexer::fleet::v1::LogRecord()));
  EXPECT_EQ(empty.outcome, RecordOutcome::kUndecodable);

  const RecordResult misfiled = ApplyLogRecord(
      indexer_,
      Logged(3, "w2",
             ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {7}))));
  EXPECT_EQ(misfiled.outcome, RecordOutcome::kUndecodable);
  EXPECT_THAT(misfiled.status.message(), HasSubstr("filed under worker"));
  EXPECT_TRUE(Holders({7}).empty());
  EXPECT_FALSE(view_.WorkerState("w1").has_value());
}

namespace v1 = ::kv_indexer::v1;
using ::kvindexer::fleet::v1::LogRecord;

const StreamKey kStream{"ns", "w", 1};
constexpr uint32_t kPageSize = 16;

LogRecord ConfigureRecord(const StreamKey& key) {
  LogRecord record;
  v1::ExpectedWorker* w = record.mutable_configure()->add_workers();
  SetStreamId(key, w->mutable_stream_id());
  w->set_worker_address("10.0.0.1:9000");
  w->set_page_size(kPageSize);
  record.set_producer("replica-a");
  return record;
}

// Keeps the records an Indexer logs, to take a live Commit's op 8 from.
class CapturingLog final : public MutationLog {
 public:
  std::vector<state::v1::WalRecord> records;

  absl::StatusOr<uint64_t> Append(const state::v1::WalRecord& r) override {
    records.push_back(r);
    return ++end_;
  }
  void Retract(uint64_t) override { records.pop_back(); }
  uint64_t end() const override { return end_; }
  absl::Status WaitDurable(uint64_t) override { return absl::OkStatus(); }

 private:
  uint64_t end_ = 0;
};

// The staged commit a live Begin/Append/Commit of `placements` (HBM
// hashes) on a fresh Indexer logs: exactly what a replica writes to the
// fleet log.
state::v1::StagedSnapshotCommit LiveCommit(const std::vector<int64_t>& hashes,
                                           Indexer& indexer) {
  CapturingLog log;
  indexer.durable_state().AttachLog(&log);
  IndexOperations& ops = indexer.operations();
  v1::ConfigureExpectedWorkersResponse configured;
  EXPECT_TRUE(ops.Configure(ConfigureRecord(kStream).configure(), &configured)
                  .Wait()
                  .ok());
  v1::BeginExternalKvSnapshotRequest begin;
  SetStreamId(kStream, begin.mutable_stream_id());
  begin.set_worker_address("10.0.0.2:9000");
  begin.set_worker_epoch("e1");
  begin.set_applied_seq(42);
  begin.mutable_metadata()->set_worker_generation("g1");
  begin.mutable_metadata()->set_model("m");
  begin.mutable_metadata()->set_page_size(kPageSize);
  begin.set_expected_placements(hashes.size());
  v1::BeginExternalKvSnapshotResponse begun;
  EXPECT_TRUE(ops.Begin(begin, &begun).Wait().ok());
  v1::AppendExternalKvSnapshotRequest append;
  append.set_transaction_id(begun.transaction_id());
  for (int64_t h : hashes) {
    v1::ExternalKvSnapshotPlacement* p = append.add_placements();
    p->set_block_hash(h);
    p->set_tier(v1::TierType(kTierHbm));
    p->set_component_mask(1);
    p->set_block_size(kPageSize);
  }
  v1::AppendExternalKvSnapshotResponse appended;
  EXPECT_TRUE(ops.Append(append, &appended).Wait().ok());
  v1::CommitExternalKvSnapshotRequest commit;
  commit.set_transaction_id(begun.transaction_id());
  v1::CommitExternalKvSnapshotResponse committed;
  EXPECT_TRUE(ops.Commit(commit, &committed).Wait().ok());
  indexer.durable_state().AttachLog(nullptr);
  for (const state::v1::WalRecord& r : log.records) {
    if (r.has_snapshot_commit()) return r.snapshot_commit();
  }
  ADD_FAILURE() << "the live Commit logged no op 8";
  return {};
}

LogRecord CommitRecord(state::v1::StagedSnapshotCommit commit) {
  LogRecord record;
  *record.mutable_snapshot_commit() = std::move(commit);
  record.set_producer("replica-a");
  return record;
}

std::vector<std::pair<int, int64_t>> Held(IndexOperations& ops,
                                          const std::vector<int64_t>& probe) {
  v1::MatchExternalKvResponse resp;
  EXPECT_TRUE(ops.Match(MatchRequest(probe), &resp).ok());
  std::vector<std::pair<int, int64_t>> out;
  for (const v1::ExternalKvNodeMatch& m : resp.matches()) {
    for (const v1::TierHashes& t : m.hashes_by_tier()) {
      for (int64_t h : t.hashes()) out.emplace_back(t.tier(), h);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

const std::string kStreamId = EncodeStreamKey(kStream);
const std::string kConfigureKey(fleet::kConfigureLogKey);

TEST_F(RecordApplierTest, AConfigurationTakesEffectAndAnswers) {
  const RecordResult result = ApplyLogRecord(
      indexer_, Logged(1, kConfigureKey, ConfigureRecord(kStream)));
  ASSERT_EQ(result.outcome, RecordOutcome::kApplied) << result.status;
  v1::ConfigureExpectedWorkersResponse resp;
  ASSERT_TRUE(resp.ParseFromString(result.response));
  EXPECT_EQ(resp.total_workers(), 1u);
  // A line-A Configure answers the indexer epoch.
  EXPECT_EQ(resp.indexer_epoch(), ops_.IndexerEpoch());
  const std::optional<WorkerRecord> record = view_.WorkerState(kStreamId);
  ASSERT_TRUE(record.has_value());
  EXPECT_TRUE(record->configured);
  EXPECT_EQ(record->meta.page_size, kPageSize);
}

TEST_F(RecordApplierTest, ARefusedConfigurationIsRefused) {
  LogRecord record = ConfigureRecord(kStream);
  *record.mutable_configure()->add_workers() =
      record.configure().workers(0);  // C3: a duplicate stream
  const RecordResult result =
      ApplyLogRecord(indexer_, Logged(1, kConfigureKey, record));
  EXPECT_EQ(result.outcome, RecordOutcome::kRefused);
  EXPECT_EQ(result.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status.message(), HasSubstr("duplicate stream"));
  EXPECT_FALSE(view_.WorkerState(kStreamId).has_value());
}

TEST_F(RecordApplierTest, AConfigurationFiledUnderAWorkerIsUndecodable) {
  const RecordResult result =
      ApplyLogRecord(indexer_, Logged(1, kStreamId, ConfigureRecord(kStream)));
  EXPECT_EQ(result.outcome, RecordOutcome::kUndecodable);
  EXPECT_FALSE(view_.WorkerState(kStreamId).has_value());
}

TEST_F(RecordApplierTest, AnInvalidationClearsTheStream) {
  ASSERT_EQ(ApplyLogRecord(indexer_,
                           Logged(1, kConfigureKey, ConfigureRecord(kStream)))
                .outcome,
            RecordOutcome::kApplied);
  LogRecord replace;
  *replace.mutable_replace() = Snapshot("", "10.0.0.1:9000")
                                   .Epoch("e0")
                                   .AppliedSeq(5)
                                   .Tier(kTierHbm, {1, 2})
                                   .request();
  SetStreamId(kStream, replace.mutable_replace()->mutable_stream_id());
  ASSERT_EQ(ApplyLogRecord(indexer_, Logged(2, kStreamId, replace)).outcome,
            RecordOutcome::kApplied);
  ASSERT_EQ(Held(ops_, {1, 2}).size(), 2u);

  LogRecord invalidate;
  SetStreamId(kStream, invalidate.mutable_invalidate()->mutable_stream_id());
  const RecordResult result =
      ApplyLogRecord(indexer_, Logged(3, kStreamId, invalidate));
  ASSERT_EQ(result.outcome, RecordOutcome::kApplied) << result.status;
  v1::InvalidateWorkerResponse resp;
  ASSERT_TRUE(resp.ParseFromString(result.response));
  EXPECT_EQ(resp.total_workers(), 1u);
  EXPECT_EQ(resp.ready_workers(), 0u);
  EXPECT_EQ(resp.indexer_epoch(), ops_.IndexerEpoch());
  EXPECT_TRUE(Held(ops_, {1, 2}).empty());
  EXPECT_FALSE(view_.WorkerState(kStreamId)->ready);

  // An unknown stream: NOT_FOUND, as over gRPC.
  LogRecord unknown;
  SetStreamId(StreamKey{"ns", "other", 0},
              unknown.mutable_invalidate()->mutable_stream_id());
  const RecordResult refused = ApplyLogRecord(
      indexer_,
      Logged(4, EncodeStreamKey(StreamKey{"ns", "other", 0}), unknown));
  EXPECT_EQ(refused.outcome, RecordOutcome::kRefused);
  EXPECT_EQ(refused.status.code(), absl::StatusCode::kNotFound);
  // Filed under another stream: skipped.
  EXPECT_EQ(ApplyLogRecord(indexer_, Logged(5, "w1", invalidate)).outcome,
            RecordOutcome::kUndecodable);
}

TEST_F(RecordApplierTest, ACommitInstallsWhatTheLiveCommitInstalled) {
  ModelBackend live_backend;
  Indexer live{&live_backend};
  const state::v1::StagedSnapshotCommit commit = LiveCommit({7, 8, 9}, live);

  ASSERT_EQ(ApplyLogRecord(indexer_,
                           Logged(1, kConfigureKey, ConfigureRecord(kStream)))
                .outcome,
            RecordOutcome::kApplied);
  const RecordResult result =
      ApplyLogRecord(indexer_, Logged(2, kStreamId, CommitRecord(commit)));
  ASSERT_EQ(result.outcome, RecordOutcome::kApplied) << result.status;
  v1::CommitExternalKvSnapshotResponse resp;
  ASSERT_TRUE(resp.ParseFromString(result.response));
  EXPECT_EQ(resp.applied_seq(), 42u);

  EXPECT_EQ(Held(ops_, {7, 8, 9}), Held(live.operations(), {7, 8, 9}));
  EXPECT_EQ(Held(ops_, {7, 8, 9}).size(), 3u);
  const std::optional<WorkerRecord> got = view_.WorkerState(kStreamId);
  const std::optional<WorkerRecord> want =
      live.operator_view().WorkerState(kStreamId);
  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(want.has_value());
  EXPECT_TRUE(got->ready);
  EXPECT_EQ(got->address, want->address);
  ASSERT_TRUE(got->checkpoint.has_value());
  EXPECT_EQ(got->checkpoint->epoch, want->checkpoint->epoch);
  EXPECT_EQ(got->checkpoint->seq, want->checkpoint->seq);
  EXPECT_EQ(got->meta.generation, "g1");
  EXPECT_EQ(got->meta.generation, want->meta.generation);
  EXPECT_EQ(got->meta.model, want->meta.model);
}

// A logged commit is installed as a restart installs it, which decides no
// evictions; the replica decides those a live Commit would have.
TEST_F(RecordApplierTest, ACommitOverThePlacementBoundEvictsAsALiveOneDoes) {
  RequestLimits limits;
  limits.placement_bound.max_per_worker = 2;
  ModelBackend live_backend;
  Indexer live{&live_backend, /*gate_log=*/nullptr, limits};
  const state::v1::StagedSnapshotCommit commit = LiveCommit({7, 8, 9}, live);
  ModelBackend replica_backend;
  Indexer replica{&replica_backend, /*gate_log=*/nullptr, limits};

  ASSERT_EQ(ApplyLogRecord(replica,
                           Logged(1, kConfigureKey, ConfigureRecord(kStream)))
                .outcome,
            RecordOutcome::kApplied);
  const RecordResult result =
      ApplyLogRecord(replica, Logged(2, kStreamId, CommitRecord(commit)));
  ASSERT_EQ(result.outcome, RecordOutcome::kApplied) << result.status;

  EXPECT_TRUE(Held(live.operations(), {7, 8, 9}).empty());
  EXPECT_TRUE(Held(replica.operations(), {7, 8, 9}).empty());
  const std::optional<WorkerRecord> got =
      replica.operator_view().WorkerState(kStreamId);
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->evicted);
  const auto worker_bound = static_cast<size_t>(EvictionReason::kWorkerBound);
  EXPECT_EQ(replica.operator_view().eviction_stats().tiers[worker_bound], 1u);
  EXPECT_EQ(live.operator_view().eviction_stats().tiers[worker_bound], 1u);
}

TEST_F(RecordApplierTest, ACommitForAnUnconfiguredStreamIsRefused) {
  ModelBackend live_backend;
  Indexer live{&live_backend};
  const RecordResult result = ApplyLogRecord(
      indexer_, Logged(1, kStreamId, CommitRecord(LiveCommit({7}, live))));
  EXPECT_EQ(result.outcome, RecordOutcome::kRefused);
  EXPECT_EQ(result.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.status.message(), HasSubstr("not configured"));
  EXPECT_TRUE(Held(ops_, {7}).empty());
}

TEST_F(RecordApplierTest, MalformedOrMisfiledCommitsAreUndecodable) {
  ModelBackend live_backend;
  Indexer live{&live_backend};
  const state::v1::StagedSnapshotCommit commit = LiveCommit({7}, live);
  ASSERT_EQ(ApplyLogRecord(indexer_,
                           Logged(1, kConfigureKey, ConfigureRecord(kStream)))
                .outcome,
            RecordOutcome::kApplied);

  EXPECT_EQ(
      ApplyLogRecord(indexer_, Logged(2, "w", CommitRecord(commit))).outcome,
      RecordOutcome::kUndecodable);
  state::v1::StagedSnapshotCommit no_stream = commit;
  no_stream.clear_stream_id();
  EXPECT_EQ(
      ApplyLogRecord(indexer_, Logged(3, kStreamId, CommitRecord(no_stream)))
          .outcome,
      RecordOutcome::kUndecodable);
  state::v1::StagedSnapshotCommit bad_sides = commit;
  bad_sides.mutable_hashes_by_tier(0)->add_block_sizes(1);
  EXPECT_EQ(
      ApplyLogRecord(indexer_, Logged(4, kStreamId, CommitRecord(bad_sides)))
          .outcome,
      RecordOutcome::kUndecodable);
  LogRecord payload = CommitRecord(commit);
  payload.set_payload_id("p1");
  EXPECT_EQ(ApplyLogRecord(indexer_, Logged(5, kStreamId, payload)).outcome,
            RecordOutcome::kUndecodable);
  EXPECT_TRUE(Held(ops_, {7}).empty());
}

}  // namespace record_applier_test
}  // namespace kvindexer::replica
