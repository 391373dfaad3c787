// Log records handed to an Indexer (replica/record_applier.h): the same
// outcome as the gRPC call they stand for, and undecodable ones skipped
// without changing anything.
#include "replica/record_applier.h"

#include <set>
#include <string>

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
        ops_, Logged(position, worker, ApplyRecord(Batch(worker, "a:1"))));
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
      ops_,
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
      ops_,
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
  const RecordResult result = ApplyLogRecord(ops_, Logged(1, "w2", record));
  EXPECT_EQ(result.outcome, RecordOutcome::kApplied) << result.status;
  EXPECT_THAT(Holders({5}), UnorderedElementsAre("w2"));
}

TEST_F(RecordApplierTest, AHeartbeatMarksTheWorker) {
  ::kvindexer::fleet::v1::LogRecord record =
      ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {7}));
  record.set_heartbeat_ttl_ms(5000);
  ASSERT_EQ(ApplyLogRecord(ops_, Logged(1, "w1", record)).outcome,
            RecordOutcome::kApplied);
  EXPECT_TRUE(view_.HeartbeatDeadline("w1").has_value());
}

TEST_F(RecordApplierTest, UndecodableRecordsChangeNothing) {
  const RecordResult garbage =
      ApplyLogRecord(ops_, fleet::LoggedRecord{1, "w1", "\xff\xff\xff"});
  EXPECT_EQ(garbage.outcome, RecordOutcome::kUndecodable);
  EXPECT_THAT(garbage.status.message(), HasSubstr("record 1"));

  const RecordResult empty = ApplyLogRecord(
      ops_, Logged(2, "w1", ::kvindexer::fleet::v1::LogRecord()));
  EXPECT_EQ(empty.outcome, RecordOutcome::kUndecodable);

  const RecordResult misfiled = ApplyLogRecord(
      ops_,
      Logged(3, "w2",
             ApplyRecord(Batch("w1", "10.0.0.1:1").Report(kTierHbm, {7}))));
  EXPECT_EQ(misfiled.outcome, RecordOutcome::kUndecodable);
  EXPECT_THAT(misfiled.status.message(), HasSubstr("filed under worker"));
  EXPECT_TRUE(Holders({7}).empty());
  EXPECT_FALSE(view_.WorkerState("w1").has_value());
}

}  // namespace record_applier_test
}  // namespace kvindexer::replica
