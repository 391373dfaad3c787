// LogApplier (bridge/log_applier.h) over a MemoryEventLog: one record per
// call carrying what the gRPC call would, retries and gated re-sends that
// append nothing twice, the fence against a second bridge, and records
// that give a replica's Indexer the same contents as the calls themselves.
#include "bridge/log_applier.h"

#include <chrono>
#include <string>
#include <vector>

#include "common/fidelity_header.h"
#include "common/heartbeat_header.h"
#include "core/indexer.h"
#include "fleet/memory_event_log.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "replica/record_applier.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"

namespace kvindexer::bridge {
namespace log_applier_test {

using kv_indexer::v1::ApplyExternalKvBatchRequest;
using kv_indexer::v1::ApplyExternalKvBatchResponse;
using kv_indexer::v1::ReplaceExternalKvSnapshotResponse;
using LogRecord = ::kvindexer::fleet::v1::LogRecord;
using test_support::Batch;
using test_support::Snapshot;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kWorker[] = "w1";
constexpr char kProducer[] = "host-a:100:aa";

std::vector<fleet::LoggedRecord> AllRecords(fleet::MemoryEventLog& log) {
  absl::StatusOr<std::vector<fleet::LoggedRecord>> records =
      log.Read(1, 1000, std::chrono::milliseconds(0));
  EXPECT_TRUE(records.ok()) << records.status();
  return records.ok() ? *records : std::vector<fleet::LoggedRecord>{};
}

LogRecord Decode(const fleet::LoggedRecord& logged) {
  LogRecord record;
  EXPECT_TRUE(record.ParseFromString(logged.payload));
  return record;
}

// The payload LogApplier writes for a plain apply without fidelity.
std::string ApplyPayload(const ApplyExternalKvBatchRequest& request,
                         const std::string& producer) {
  LogRecord record;
  *record.mutable_apply() = request;
  record.set_producer(producer);
  return record.SerializeAsString();
}

class LogApplierTest : public ::testing::Test {
 protected:
  absl::Status Apply(LogApplier& applier,
                     const ApplyExternalKvBatchRequest& request) {
    ApplyExternalKvBatchResponse response;
    return applier.Apply(request, &response);
  }
  size_t RecordCount() { return AllRecords(log_).size(); }

  fleet::MemoryEventLog log_;
  LogApplier applier_{kWorker, kProducer, &log_};
};

TEST_F(LogApplierTest, AnApplyBecomesOneRecord) {
  const Batch batch =
      Batch(kWorker, "10.0.0.1:1").Seq(3).Report(kTierHbm, {1, 2});
  ApplyExternalKvBatchResponse response;
  ASSERT_TRUE(applier_.Apply(batch, &response).ok());
  EXPECT_EQ(response.applied_seq(), 3u);
  EXPECT_FALSE(response.duplicate());

  const std::vector<fleet::LoggedRecord> records = AllRecords(log_);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].worker_id, kWorker);
  const LogRecord record = Decode(records[0]);
  ASSERT_TRUE(record.has_apply());
  EXPECT_EQ(record.apply().SerializeAsString(),
            batch.request().SerializeAsString());
  EXPECT_EQ(record.producer(), kProducer);
  EXPECT_EQ(record.heartbeat_ttl_ms(), 0u);
  EXPECT_EQ(record.fidelity(), "");
}

TEST_F(LogApplierTest, HeartbeatTtlAndFidelityAreCarried) {
  applier_.SetFidelity("degraded; snapshot_truncated");
  ApplyExternalKvBatchResponse response;
  ASSERT_TRUE(applier_.Heartbeat(Batch(kWorker, "a:1"), 5000, &response).ok());
  applier_.SetFidelity("exact");
  ReplaceExternalKvSnapshotResponse replaced;
  ASSERT_TRUE(
      applier_
          .Replace(Snapshot(kWorker, "a:1").Epoch("e").AppliedSeq(9), &replaced)
          .ok());
  EXPECT_EQ(replaced.applied_seq(), 9u);

  const std::vector<fleet::LoggedRecord> records = AllRecords(log_);
  ASSERT_EQ(records.size(), 2u);
  const LogRecord beat = Decode(records[0]);
  EXPECT_TRUE(beat.has_apply());
  EXPECT_EQ(beat.heartbeat_ttl_ms(), 5000u);
  EXPECT_EQ(beat.fidelity(), "degraded; snapshot_truncated");
  const LogRecord install = Decode(records[1]);
  ASSERT_TRUE(install.has_replace());
  EXPECT_EQ(install.replace().worker_epoch(), "e");
  EXPECT_EQ(install.heartbeat_ttl_ms(), 0u);
  EXPECT_EQ(install.fidelity(), "exact");
  EXPECT_EQ(install.producer(), kProducer);
}

TEST_F(LogApplierTest, ARetryAfterUnavailableDoesNotAppendTwice) {
  ASSERT_TRUE(Apply(applier_, Batch(kWorker, "a:1").Seq(1)).ok());
  const Batch second = Batch(kWorker, "a:1").Seq(2).Report(kTierHbm, {5});
  log_.SetUnavailable(true);
  EXPECT_EQ(Apply(applier_, second).code(), absl::StatusCode::kUnavailable);
  log_.SetUnavailable(false);
  // The publish did land; only its answer was lost. The applier's second
  // record has the id "<producer>:2".
  ASSERT_TRUE(log_.Append(kWorker, ApplyPayload(second, kProducer),
                          std::string(kProducer) + ":2", std::nullopt)
                  .ok());
  ASSERT_EQ(RecordCount(), 2u);

  EXPECT_TRUE(Apply(applier_, second).ok());
  EXPECT_EQ(RecordCount(), 2u);
  // The next call goes on after the record whose answer was lost.
  EXPECT_TRUE(Apply(applier_, Batch(kWorker, "a:1").Seq(3)).ok());
  EXPECT_EQ(RecordCount(), 3u);
}

TEST_F(LogApplierTest, OnlyTheIdenticalRequestCountsAsTheRetry) {
  ASSERT_TRUE(Apply(applier_, Batch(kWorker, "a:1").Seq(1)).ok());
  const Batch failed = Batch(kWorker, "a:1").Seq(2);
  log_.SetUnavailable(true);
  EXPECT_EQ(Apply(applier_, failed).code(), absl::StatusCode::kUnavailable);
  log_.SetUnavailable(false);
  ASSERT_TRUE(log_.Append(kWorker, ApplyPayload(failed, kProducer),
                          std::string(kProducer) + ":2", std::nullopt)
                  .ok());
  // Another request after the failure is new: appended.
  EXPECT_TRUE(Apply(applier_, Batch(kWorker, "a:1").Seq(7)).ok());
  const std::vector<fleet::LoggedRecord> records = AllRecords(log_);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(Decode(records[2]).apply().seq(), 7u);
}

TEST_F(LogApplierTest, AGatedRetryReusesItsWorkerEpochSeqId) {
  const Batch gated = Batch(kWorker, "a:1").Gated("e", 4).Report(kTierHbm, {1});
  log_.SetUnavailable(true);
  EXPECT_EQ(Apply(applier_, gated).code(), absl::StatusCode::kUnavailable);
  log_.SetUnavailable(false);
  ASSERT_TRUE(log_.Append(kWorker, ApplyPayload(gated, kProducer),
                          GatedDedupId(kWorker, "e", 4), std::nullopt)
                  .ok());
  ApplyExternalKvBatchResponse response;
  ASSERT_TRUE(applier_.Apply(gated, &response).ok());
  EXPECT_TRUE(response.duplicate());
  EXPECT_EQ(response.applied_seq(), 4u);
  EXPECT_EQ(RecordCount(), 1u);
}

TEST_F(LogApplierTest, AGatedApplyIsDeduplicatedByWorkerEpochAndSeq) {
  const Batch gated = Batch(kWorker, "a:1").Gated("e", 5).Report(kTierHbm, {1});
  ApplyExternalKvBatchResponse first;
  ASSERT_TRUE(applier_.Apply(gated, &first).ok());
  EXPECT_FALSE(first.duplicate());
  EXPECT_EQ(first.applied_seq(), 5u);

  ApplyExternalKvBatchResponse again;
  ASSERT_TRUE(applier_.Apply(gated, &again).ok());
  EXPECT_TRUE(again.duplicate());
  EXPECT_EQ(again.applied_seq(), 5u);

  // A restarted bridge (another producer) re-sending it appends nothing.
  LogApplier restarted(kWorker, "host-a:101:bb", &log_);
  ApplyExternalKvBatchResponse resent;
  ASSERT_TRUE(restarted.Apply(gated, &resent).ok());
  EXPECT_TRUE(resent.duplicate());
  EXPECT_EQ(RecordCount(), 1u);

  EXPECT_EQ(GatedDedupId("w1", "e", 5), "7731:e:5");
}

TEST_F(LogApplierTest, ASecondBridgeForTheWorkerIsReportedNotFought) {
  LogApplier other(kWorker, "host-b:200:bb", &log_);
  ASSERT_TRUE(Apply(applier_, Batch(kWorker, "a:1").Seq(1)).ok());
  ASSERT_TRUE(Apply(other, Batch(kWorker, "a:1").Seq(1)).ok());
  ASSERT_EQ(RecordCount(), 2u);

  // Whichever bridge appends after the other did is told who it is.
  const absl::Status refused = Apply(applier_, Batch(kWorker, "a:1").Seq(2));
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("another bridge"));
  EXPECT_THAT(refused.message(), HasSubstr("\"host-b:200:bb\""));
  EXPECT_EQ(RecordCount(), 2u);
  // It stays refused, heartbeats and installs included.
  ApplyExternalKvBatchResponse response;
  EXPECT_EQ(applier_.Heartbeat(Batch(kWorker, "a:1"), 1000, &response).code(),
            absl::StatusCode::kFailedPrecondition);
  ReplaceExternalKvSnapshotResponse replaced;
  EXPECT_EQ(applier_.Replace(Snapshot(kWorker).Epoch("e"), &replaced).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(RecordCount(), 2u);

  // The other bridge goes on; when it in turn finds this one's record
  // after its own, it names this one.
  ASSERT_TRUE(Apply(other, Batch(kWorker, "a:1").Seq(2)).ok());
  ASSERT_TRUE(log_.Append(kWorker, ApplyPayload(Batch(kWorker), kProducer),
                          "lost", std::nullopt)
                  .ok());
  const absl::Status other_refused = Apply(other, Batch(kWorker).Seq(3));
  EXPECT_EQ(other_refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(other_refused.message(), HasSubstr(kProducer));
  EXPECT_EQ(RecordCount(), 4u);
}

TEST_F(LogApplierTest, OurOwnRecordWhoseAnswerWasLostIsAdopted) {
  ASSERT_TRUE(Apply(applier_, Batch(kWorker, "a:1").Seq(1)).ok());
  // An earlier append of ours landed while its answer was lost, and the
  // bridge moved on to another request.
  ASSERT_TRUE(log_.Append(kWorker,
                          ApplyPayload(Batch(kWorker, "a:1").Seq(2), kProducer),
                          "some-earlier-id", std::nullopt)
                  .ok());
  EXPECT_TRUE(Apply(applier_, Batch(kWorker, "a:1").Seq(3)).ok());
  EXPECT_TRUE(Apply(applier_, Batch(kWorker, "a:1").Seq(4)).ok());
  const std::vector<fleet::LoggedRecord> records = AllRecords(log_);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(Decode(records[2]).apply().seq(), 3u);
  EXPECT_EQ(Decode(records[3]).apply().seq(), 4u);
}

TEST_F(LogApplierTest, ARestartedBridgeContinuesAfterTheOldOnesRecords) {
  ASSERT_TRUE(Apply(applier_, Batch(kWorker, "a:1").Seq(1)).ok());
  LogApplier restarted(kWorker, "host-a:101:bb", &log_);
  EXPECT_TRUE(Apply(restarted, Batch(kWorker, "a:1").Seq(1)).ok());
  EXPECT_TRUE(Apply(restarted, Batch(kWorker, "a:1").Seq(2)).ok());
  EXPECT_EQ(RecordCount(), 3u);
}

TEST_F(LogApplierTest, AnotherWorkersRequestIsRefusedAndNotLogged) {
  const absl::Status apply = Apply(applier_, Batch("w2", "a:1"));
  EXPECT_EQ(apply.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(apply.message(), HasSubstr("\"w2\""));
  ApplyExternalKvBatchResponse response;
  EXPECT_EQ(applier_.Heartbeat(Batch("w2"), 1000, &response).code(),
            absl::StatusCode::kInvalidArgument);
  ReplaceExternalKvSnapshotResponse replaced;
  EXPECT_EQ(applier_.Replace(Snapshot("w2").Epoch("e"), &replaced).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RecordCount(), 0u);
}

TEST(LogApplierLimits, ARecordAboveTheLogsLimitIsRefusedWithItsSize) {
  fleet::MemoryEventLog log(/*max_payload_bytes=*/256);
  LogApplier applier(kWorker, kProducer, &log);
  std::vector<int64_t> hashes(100);
  for (size_t i = 0; i < hashes.size(); ++i) hashes[i] = int64_t(i) + 1;
  const Batch big = Batch(kWorker, "a:1").Report(kTierHbm, hashes);
  LogRecord record;
  *record.mutable_apply() = big;
  record.set_producer(kProducer);
  const size_t size = record.ByteSizeLong();
  ASSERT_GT(size, 256u);

  ApplyExternalKvBatchResponse response;
  const absl::Status status = applier.Apply(big, &response);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr(std::to_string(size) + " bytes"));
  EXPECT_THAT(status.message(), HasSubstr("256"));
  absl::StatusOr<fleet::LogBounds> bounds = log.Bounds();
  ASSERT_TRUE(bounds.ok());
  EXPECT_EQ(bounds->last, 0u);
}

// PROBE (docs/bridge-events.md, "Recovery > Primitives"): every one is
// logged (a heartbeat must reach the replicas), and answered as a gated
// server would from what this bridge installed and sent.
TEST_F(LogApplierTest, AProbeIsLoggedAndAnsweredFromTheBridgesOwnRecords) {
  const Batch probe = Batch(kWorker, "a:1").Gated("e", 0);
  ApplyExternalKvBatchResponse response;
  const absl::Status before = applier_.Heartbeat(probe, 3000, &response);
  EXPECT_EQ(before.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(before.message(), Not(HasSubstr("another bridge")));
  EXPECT_EQ(RecordCount(), 1u);

  ReplaceExternalKvSnapshotResponse replaced;
  ASSERT_TRUE(
      applier_
          .Replace(Snapshot(kWorker, "a:1").Epoch("e").AppliedSeq(4), &replaced)
          .ok());
  ASSERT_TRUE(applier_.Heartbeat(probe, 3000, &response).ok());
  EXPECT_TRUE(response.duplicate());
  EXPECT_EQ(response.applied_seq(), 4u);

  ASSERT_TRUE(Apply(applier_, Batch(kWorker, "a:1").Gated("e", 5)).ok());
  ASSERT_TRUE(applier_.Apply(probe, &response).ok());
  EXPECT_TRUE(response.duplicate());
  EXPECT_EQ(response.applied_seq(), 5u);
  // Another epoch has no snapshot.
  EXPECT_EQ(
      applier_.Apply(Batch(kWorker, "a:1").Gated("f", 0), &response).code(),
      absl::StatusCode::kFailedPrecondition);
  // A gap leaves the replicas without a checkpoint.
  ASSERT_TRUE(Apply(applier_, Batch(kWorker, "a:1").Gated("e", 9)).ok());
  EXPECT_EQ(applier_.Apply(probe, &response).code(),
            absl::StatusCode::kFailedPrecondition);
  // Every call above was appended: 4 probes of epoch e, one of epoch f, an
  // install and 2 sends.
  EXPECT_EQ(RecordCount(), 8u);
}

TEST_F(LogApplierTest, ASendCoveredOnlyBeforeAnInstallIsLoggedAgain) {
  ReplaceExternalKvSnapshotResponse replaced;
  ASSERT_TRUE(
      applier_.Replace(Snapshot(kWorker).Epoch("e").AppliedSeq(4), &replaced)
          .ok());
  ASSERT_TRUE(Apply(applier_, Batch(kWorker).Gated("e", 5)).ok());
  // A resynchronisation installs an older snapshot of the same epoch and
  // re-sends seq 5: the replicas need it after that install.
  ASSERT_TRUE(
      applier_.Replace(Snapshot(kWorker).Epoch("e").AppliedSeq(4), &replaced)
          .ok());
  ApplyExternalKvBatchResponse response;
  ASSERT_TRUE(applier_.Apply(Batch(kWorker).Gated("e", 5), &response).ok());
  EXPECT_FALSE(response.duplicate());
  const std::vector<fleet::LoggedRecord> records = AllRecords(log_);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(Decode(records[3]).apply().seq(), 5u);
}

// What a replica does with the records gives the answers the direct calls
// give.
TEST(LogApplierReplica, RecordsGiveTheSameIndexAsDirectCalls) {
  fleet::MemoryEventLog log;
  LogApplier applier(kWorker, kProducer, &log);
  test_support::ModelBackend direct_backend;
  Indexer direct(&direct_backend);

  const std::vector<ApplyExternalKvBatchRequest> applies = {
      Batch(kWorker, "10.0.0.1:1"),
      Batch(kWorker, "10.0.0.1:1").Gated("e", 3).Report(kTierHbm, {20, 21}),
      Batch(kWorker, "10.0.0.1:1")
          .Gated("e", 4)
          .Revoke(kTierHbm, {10})
          .Report(kTierDram, {30}),
      Batch("w-other-ignored", "x"),  // refused by the applier
  };
  auto install = Snapshot(kWorker, "10.0.0.1:1")
                     .Epoch("e")
                     .AppliedSeq(2)
                     .Tier(kTierHbm, {10, 11});

  // The same calls, directly and through the log.
  for (size_t i = 0; i < applies.size(); ++i) {
    ApplyExternalKvBatchResponse via_log;
    ApplyExternalKvBatchResponse via_indexer;
    const absl::Status logged = applier.Apply(applies[i], &via_log);
    if (!logged.ok()) {
      EXPECT_EQ(applies[i].worker_id(), "w-other-ignored");
      continue;
    }
    ASSERT_TRUE(
        direct.operations().Apply(applies[i], &via_indexer).Wait().ok());
    EXPECT_EQ(via_log.applied_seq(), via_indexer.applied_seq());
    if (i == 0) {
      ReplaceExternalKvSnapshotResponse a;
      ReplaceExternalKvSnapshotResponse b;
      ASSERT_TRUE(applier.Replace(install, &a).ok());
      ASSERT_TRUE(direct.operations().Replace(install, &b).Wait().ok());
      EXPECT_EQ(a.applied_seq(), b.applied_seq());
    }
  }
  ApplyExternalKvBatchResponse beat;
  const Batch probe = Batch(kWorker, "10.0.0.1:1").Gated("e", 0);
  ASSERT_TRUE(applier.Heartbeat(probe, 60000, &beat).ok());
  ApplyExternalKvBatchResponse direct_beat;
  ASSERT_TRUE(direct.operations()
                  .Apply(probe, &direct_beat,
                         {.heartbeat =
                              HeartbeatHeader::Valid(std::chrono::seconds(60))})
                  .Wait()
                  .ok());
  EXPECT_EQ(beat.applied_seq(), direct_beat.applied_seq());
  EXPECT_EQ(beat.duplicate(), direct_beat.duplicate());

  test_support::ModelBackend replica_backend;
  Indexer replica_indexer(&replica_backend);
  for (const fleet::LoggedRecord& record : AllRecords(log)) {
    const replica::RecordResult result =
        replica::ApplyLogRecord(replica_indexer, record);
    EXPECT_EQ(result.outcome, replica::RecordOutcome::kApplied)
        << result.status;
  }

  for (int64_t hash : {10, 11, 20, 21, 30, 99}) {
    kv_indexer::v1::MatchExternalKvResponse want;
    kv_indexer::v1::MatchExternalKvResponse got;
    ASSERT_TRUE(direct.operations()
                    .Match(test_support::MatchRequest({hash}), &want)
                    .ok());
    ASSERT_TRUE(replica_indexer.operations()
                    .Match(test_support::MatchRequest({hash}), &got)
                    .ok());
    EXPECT_EQ(got.SerializeAsString(), want.SerializeAsString())
        << "hash " << hash;
  }
  // Not vacuous: the index holds what the calls reported.
  kv_indexer::v1::MatchExternalKvResponse held;
  ASSERT_TRUE(replica_indexer.operations()
                  .Match(test_support::MatchRequest({21}), &held)
                  .ok());
  ASSERT_EQ(held.matches_size(), 1);
  EXPECT_EQ(held.matches(0).worker_id(), kWorker);
  kv_indexer::v1::MatchExternalKvResponse revoked;
  ASSERT_TRUE(replica_indexer.operations()
                  .Match(test_support::MatchRequest({10}), &revoked)
                  .ok());
  EXPECT_EQ(revoked.matches_size(), 0);
  EXPECT_TRUE(
      replica_indexer.operator_view().HeartbeatDeadline(kWorker).has_value());
  EXPECT_EQ(replica_indexer.operator_view().WorkerState(kWorker).has_value(),
            direct.operator_view().WorkerState(kWorker).has_value());
}

}  // namespace log_applier_test
}  // namespace kvindexer::bridge
