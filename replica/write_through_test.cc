// Line-A writes through a replica (replica/write_through.h): appended to the
// log, answered with the outcome the replica's own reader produced at that
// position, installed on every replica of the log alike; other writes
// refused; staged commits captured instead of installed out of log order,
// and those too large for one record carried as payloads.
#include "replica/write_through.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/stream_key.h"
#include "fleet/memory_event_log.h"
#include "fleet/memory_snapshot_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "replica/applied_outcomes.h"
#include "replica/commit_capture_log.h"
#include "replica/commit_payload.h"
#include "replica/log_follower.h"
#include "replica/record_applier.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"
#include "tests/support/server_process.h"

namespace kvindexer::replica {
// Named, not anonymous: the unity build joins test files.
namespace write_through_test {

using namespace std::chrono_literals;
using test_support::ModelBackend;
using test_support::WaitUntil;
using ::testing::HasSubstr;
namespace v1 = ::kv_indexer::v1;

const StreamKey kStream{"ns", "w", 1};
constexpr uint32_t kPageSize = 16;

v1::ConfigureExpectedWorkersRequest ConfigureStream() {
  v1::ConfigureExpectedWorkersRequest req;
  v1::ExpectedWorker* w = req.add_workers();
  SetStreamId(kStream, w->mutable_stream_id());
  w->set_worker_address("10.0.0.1:9000");
  w->set_page_size(kPageSize);
  return req;
}

std::vector<int64_t> Held(IndexOperations& ops,
                          const std::vector<int64_t>& probe) {
  v1::MatchExternalKvResponse resp;
  EXPECT_TRUE(ops.Match(test_support::MatchRequest(probe), &resp).ok());
  std::vector<int64_t> out;
  for (const v1::ExternalKvNodeMatch& m : resp.matches()) {
    for (const v1::TierHashes& t : m.hashes_by_tier()) {
      out.insert(out.end(), t.hashes().begin(), t.hashes().end());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// One replica: an Indexer with the capture log, its follower reporting to
// its outcomes, and the write-through over them.
// With `payloads`, commits too large for one record are stored there.
struct Replica {
  explicit Replica(fleet::EventLog& log,
                   std::chrono::milliseconds timeout = 10s, bool start = true,
                   fleet::SnapshotStore* payloads = nullptr,
                   std::string producer = "replica-a")
      : follower(log, indexer, Options(&outcomes, payloads)),
        writes(indexer, log, outcomes,
               WriteThroughOptions{.producer = std::move(producer),
                                   .limits = RequestLimits{},
                                   .timeout = timeout,
                                   .payloads = payloads}) {
    indexer.durable_state().AttachLog(&capture);
    if (start) follower.Start();
  }
  ~Replica() { follower.Stop(); }

  static LogFollowerOptions Options(AppliedOutcomes* outcomes,
                                    fleet::SnapshotStore* payloads) {
    LogFollowerOptions options;
    options.read_wait = 20ms;
    options.retry_initial = 1ms;
    options.retry_cap = 10ms;
    options.outcomes = outcomes;
    options.payloads = payloads;
    return options;
  }

  ModelBackend backend;
  Indexer indexer{&backend};
  CommitCaptureLog capture;
  AppliedOutcomes outcomes;
  LogFollower follower;
  WriteThrough writes;
};

class WriteThroughTest : public ::testing::Test {
 protected:
  // Another replica of the same log: applies every record up to the end.
  void Follow(Indexer& other) {
    absl::StatusOr<fleet::LogBounds> bounds = log_.Bounds();
    ASSERT_TRUE(bounds.ok());
    absl::StatusOr<std::vector<fleet::LoggedRecord>> records =
        log_.Read(1, 1000, 0ms);
    ASSERT_TRUE(records.ok());
    for (const fleet::LoggedRecord& r : *records) {
      (void)ApplyLogRecord(other, r);
    }
  }

  absl::StatusOr<std::string> Begin(IndexOperations& ops, uint64_t expected) {
    v1::BeginExternalKvSnapshotRequest begin;
    SetStreamId(kStream, begin.mutable_stream_id());
    begin.set_worker_address("10.0.0.2:9000");
    begin.set_worker_epoch("e1");
    begin.set_applied_seq(42);
    begin.mutable_metadata()->set_worker_generation("g1");
    begin.mutable_metadata()->set_page_size(kPageSize);
    begin.set_expected_placements(expected);
    v1::BeginExternalKvSnapshotResponse resp;
    if (absl::Status s = ops.Begin(begin, &resp).Wait(); !s.ok()) return s;
    return resp.transaction_id();
  }
  absl::Status Stage(IndexOperations& ops, const std::string& tx,
                     const std::vector<int64_t>& hashes) {
    v1::AppendExternalKvSnapshotRequest append;
    append.set_transaction_id(tx);
    for (int64_t h : hashes) {
      v1::ExternalKvSnapshotPlacement* p = append.add_placements();
      p->set_block_hash(h);
      p->set_tier(v1::TierType(kTierHbm));
      p->set_component_mask(1);
      p->set_block_size(kPageSize);
    }
    v1::AppendExternalKvSnapshotResponse resp;
    return ops.Append(append, &resp).Wait();
  }
  absl::StatusOr<uint64_t> Commit(IndexOperations& ops, const std::string& tx) {
    v1::CommitExternalKvSnapshotRequest req;
    req.set_transaction_id(tx);
    v1::CommitExternalKvSnapshotResponse resp;
    if (absl::Status s = ops.Commit(req, &resp).Wait(); !s.ok()) return s;
    return resp.applied_seq();
  }

  fleet::MemoryEventLog log_;
};

TEST_F(WriteThroughTest, ConfigureAndInvalidateGoThroughTheLog) {
  Replica replica(log_);
  v1::ConfigureExpectedWorkersResponse configured;
  ASSERT_TRUE(
      replica.writes.Configure(ConfigureStream(), &configured).Wait().ok());
  EXPECT_EQ(configured.total_workers(), 1u);
  EXPECT_EQ(configured.indexer_epoch(), replica.writes.IndexerEpoch());
  // Filed where every replica looks for configurations.
  absl::StatusOr<uint64_t> last = log_.LastPositionOf(fleet::kConfigureLogKey);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, 1u);

  v1::InvalidateWorkerRequest invalidate;
  SetStreamId(kStream, invalidate.mutable_stream_id());
  v1::InvalidateWorkerResponse invalidated;
  ASSERT_TRUE(replica.writes.Invalidate(invalidate, &invalidated).Wait().ok());
  EXPECT_EQ(invalidated.total_workers(), 1u);

  // A refusal is the Indexer's, at the record's position.
  v1::InvalidateWorkerRequest unknown;
  SetStreamId(StreamKey{"ns", "nobody", 0}, unknown.mutable_stream_id());
  const absl::Status refused =
      replica.writes.Invalidate(unknown, &invalidated).Wait();
  EXPECT_EQ(refused.code(), absl::StatusCode::kNotFound);

  // Another replica of the log holds the same stream.
  ModelBackend other_backend;
  Indexer other{&other_backend};
  Follow(other);
  const std::optional<WorkerRecord> record =
      other.operator_view().WorkerState(EncodeStreamKey(kStream));
  ASSERT_TRUE(record.has_value());
  EXPECT_TRUE(record->configured);
}

// A heartbeat (the list the records already hold) appends nothing once the
// replica has applied the whole log: answered as a standalone server's
// unchanged Configure. A change, or a replica behind the log, appends.
TEST_F(WriteThroughTest, AnUnchangedConfigureAppendsNothing) {
  Replica replica(log_);
  v1::ConfigureExpectedWorkersResponse configured;
  ASSERT_TRUE(
      replica.writes.Configure(ConfigureStream(), &configured).Wait().ok());
  ASSERT_EQ(log_.Bounds()->last, 1u);
  for (int i = 0; i < 5; ++i) {
    v1::ConfigureExpectedWorkersResponse again;
    ASSERT_TRUE(
        replica.writes.Configure(ConfigureStream(), &again).Wait().ok());
    EXPECT_EQ(again.SerializeAsString(), configured.SerializeAsString());
  }
  EXPECT_EQ(log_.Bounds()->last, 1u);

  v1::ConfigureExpectedWorkersRequest moved = ConfigureStream();
  moved.mutable_workers(0)->set_worker_address("10.0.0.9:9000");
  ASSERT_TRUE(replica.writes.Configure(moved, &configured).Wait().ok());
  EXPECT_EQ(log_.Bounds()->last, 2u);

  // A replica that has not applied the log: its own records hold the list
  // (configured directly), but the log may hold a change it has not seen,
  // so the call is written through (and, never applied here, times out).
  Replica behind(log_, /*timeout=*/50ms, /*start=*/false, nullptr, "replica-b");
  ASSERT_TRUE(
      behind.indexer.operations().Configure(moved, &configured).Wait().ok());
  EXPECT_EQ(behind.writes.Configure(moved, &configured).Wait().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(log_.Bounds()->last, 3u);

  // A replica that has passed more of a log than the log now holds (a
  // stream deleted and created again) is not caught up with it either.
  uint64_t before = log_.Bounds()->last;
  replica.outcomes.Reloaded(1000);
  (void)replica.writes.Configure(moved, &configured).Wait();
  EXPECT_EQ(log_.Bounds()->last, before + 1);
}

// A replica that skipped records (trimmed, no snapshot to reload) holds a
// state of no position of the log: even at the log's end its heartbeats
// go through the log, until a reloaded snapshot puts it at a position
// again, and one that reloaded an older snapshot is behind.
TEST_F(WriteThroughTest, AReplicaThatSkippedRecordsWritesHeartbeatsThrough) {
  Replica replica(log_);
  v1::ConfigureExpectedWorkersResponse configured;
  ASSERT_TRUE(
      replica.writes.Configure(ConfigureStream(), &configured).Wait().ok());
  const uint64_t end = log_.Bounds()->last;
  ASSERT_EQ(replica.outcomes.current(), end);

  // Each Configure written through waits until this replica applied it.
  replica.outcomes.Skipped(end);
  EXPECT_EQ(replica.outcomes.current(), std::nullopt);
  ASSERT_TRUE(
      replica.writes.Configure(ConfigureStream(), &configured).Wait().ok());
  EXPECT_EQ(log_.Bounds()->last, end + 1);
  // Applying the appended record gives no position back.
  EXPECT_EQ(replica.outcomes.current(), std::nullopt);
  ASSERT_TRUE(
      replica.writes.Configure(ConfigureStream(), &configured).Wait().ok());
  EXPECT_EQ(log_.Bounds()->last, end + 2);

  // A snapshot of an older position: behind the log, still written through.
  replica.outcomes.Reloaded(end);
  ASSERT_TRUE(
      replica.writes.Configure(ConfigureStream(), &configured).Wait().ok());
  EXPECT_EQ(log_.Bounds()->last, end + 3);

  // Holding the log's end again, the replica answers heartbeats itself.
  EXPECT_EQ(replica.outcomes.current(), end + 3);
  ASSERT_TRUE(
      replica.writes.Configure(ConfigureStream(), &configured).Wait().ok());
  EXPECT_EQ(log_.Bounds()->last, end + 3);
}

TEST_F(WriteThroughTest, SeedEraWritesAreRefusedAndNotLogged) {
  Replica replica(log_);
  v1::ApplyExternalKvBatchResponse applied;
  const absl::Status apply =
      replica.writes
          .Apply(test_support::Batch("w1", "a:1").Report(kTierHbm, {7}),
                 &applied, {})
          .Wait();
  EXPECT_EQ(apply.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(apply.message(), HasSubstr("KV_INDEXER_EVENT_SOURCE"));
  v1::ConfigureExpectedWorkersRequest seed_era;
  seed_era.add_workers()->set_worker_id("w1");
  v1::ConfigureExpectedWorkersResponse configured;
  EXPECT_EQ(replica.writes.Configure(seed_era, &configured).Wait().code(),
            absl::StatusCode::kFailedPrecondition);
  // An invalid line-A request is refused before the log.
  v1::InvalidateWorkerRequest blank;
  v1::InvalidateWorkerResponse invalidated;
  EXPECT_EQ(replica.writes.Invalidate(blank, &invalidated).Wait().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<fleet::LogBounds> bounds = log_.Bounds();
  ASSERT_TRUE(bounds.ok());
  EXPECT_EQ(bounds->last, 0u);
}

TEST_F(WriteThroughTest, ACommitInstallsFromTheLogOnEveryReplica) {
  Replica replica(log_);
  IndexOperations& ops = replica.writes;
  v1::ConfigureExpectedWorkersResponse configured;
  ASSERT_TRUE(ops.Configure(ConfigureStream(), &configured).Wait().ok());
  absl::StatusOr<std::string> tx = Begin(ops, 3);
  ASSERT_TRUE(tx.ok()) << tx.status();
  ASSERT_TRUE(Stage(ops, *tx, {7, 8, 9}).ok());
  absl::StatusOr<uint64_t> committed = Commit(ops, *tx);
  ASSERT_TRUE(committed.ok()) << committed.status();
  EXPECT_EQ(*committed, 42u);
  EXPECT_EQ(Held(ops, {7, 8, 9}), (std::vector<int64_t>{7, 8, 9}));
  // A repeated Commit answers the same, and appends nothing.
  const uint64_t end = log_.Bounds()->last;
  absl::StatusOr<uint64_t> again = Commit(ops, *tx);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, 42u);
  EXPECT_EQ(log_.Bounds()->last, end);

  ModelBackend other_backend;
  Indexer other{&other_backend};
  Follow(other);
  EXPECT_EQ(Held(other.operations(), {7, 8, 9}),
            (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(other.operator_view()
                .WorkerState(EncodeStreamKey(kStream))
                ->checkpoint->seq,
            42u);
}

// 100 HBM placements: about 1 KB as one record.
std::vector<int64_t> HundredHashes() {
  std::vector<int64_t> hashes;
  for (int64_t h = 1; h <= 100; ++h) hashes.push_back(h * 1000003);
  return hashes;
}

TEST_F(WriteThroughTest, ACommitTooLargeForOneRecordTravelsAsAPayload) {
  fleet::MemoryEventLog small(/*max_payload_bytes=*/512);
  // Parts of 512 bytes: the payload takes several.
  fleet::MemorySnapshotStore store(/*max_part_bytes=*/512);
  Replica replica(small, 10s, true, &store);
  IndexOperations& ops = replica.writes;
  v1::ConfigureExpectedWorkersResponse configured;
  ASSERT_TRUE(ops.Configure(ConfigureStream(), &configured).Wait().ok());
  const std::vector<int64_t> hashes = HundredHashes();
  absl::StatusOr<std::string> tx = Begin(ops, hashes.size());
  ASSERT_TRUE(tx.ok()) << tx.status();
  ASSERT_TRUE(Stage(ops, *tx, hashes).ok());
  absl::StatusOr<uint64_t> committed = Commit(ops, *tx);
  ASSERT_TRUE(committed.ok()) << committed.status();
  EXPECT_EQ(*committed, 42u);
  // Answered as an inline commit: installed here at its position.
  EXPECT_EQ(Held(ops, hashes), hashes);
  const uint64_t end = small.Bounds()->last;
  absl::StatusOr<uint64_t> again = Commit(ops, *tx);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, 42u);
  EXPECT_EQ(small.Bounds()->last, end);

  // The record names the payload and carries no placement.
  absl::StatusOr<std::vector<fleet::LoggedRecord>> records =
      small.Read(end, 1, 0ms);
  ASSERT_TRUE(records.ok() && records->size() == 1u);
  ::kvindexer::fleet::v1::LogRecord record;
  ASSERT_TRUE(record.ParseFromString(records->front().payload));
  EXPECT_TRUE(IsPayloadCommit(record));
  EXPECT_EQ(record.payload_placements(), hashes.size());
  EXPECT_GT(record.payload_parts(), 1u);
  EXPECT_EQ(record.snapshot_commit().hashes_by_tier_size(), 0);
  EXPECT_THAT(store.payload_ids(), ::testing::ElementsAre(record.payload_id()));

  // Another replica of the log, with the store, installs it too.
  Replica other(small, 10s, true, &store, "replica-b");
  ASSERT_TRUE(
      WaitUntil([&] { return other.follower.applied_position() >= end; }, 10s));
  EXPECT_EQ(Held(other.indexer.operations(), hashes), hashes);
  EXPECT_EQ(other.indexer.operator_view()
                .WorkerState(EncodeStreamKey(kStream))
                ->checkpoint->seq,
            42u);
}

TEST_F(WriteThroughTest, ACommitTooLargeWithoutAStoreIsRefused) {
  fleet::MemoryEventLog small(/*max_payload_bytes=*/512);
  Replica replica(small);
  IndexOperations& ops = replica.writes;
  v1::ConfigureExpectedWorkersResponse configured;
  ASSERT_TRUE(ops.Configure(ConfigureStream(), &configured).Wait().ok());
  const std::vector<int64_t> hashes = HundredHashes();
  absl::StatusOr<std::string> tx = Begin(ops, hashes.size());
  ASSERT_TRUE(tx.ok()) << tx.status();
  ASSERT_TRUE(Stage(ops, *tx, hashes).ok());
  absl::StatusOr<uint64_t> committed = Commit(ops, *tx);
  EXPECT_EQ(committed.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(committed.status().message(), HasSubstr("no snapshot store"));
  EXPECT_TRUE(Held(ops, hashes).empty());
}

// The limit that remains: a commit record whose other fields alone exceed
// the per-record limit, here through a long producer name, which the
// record and its payload id both carry.
TEST_F(WriteThroughTest, ACommitTooLargeEvenAsAPayloadIsRefused) {
  fleet::MemoryEventLog small(/*max_payload_bytes=*/700);
  fleet::MemorySnapshotStore store(/*max_part_bytes=*/512);
  Replica replica(small, 10s, true, &store, std::string(300, 'r'));
  IndexOperations& ops = replica.writes;
  v1::ConfigureExpectedWorkersResponse configured;
  ASSERT_TRUE(ops.Configure(ConfigureStream(), &configured).Wait().ok());
  const std::vector<int64_t> hashes = HundredHashes();
  absl::StatusOr<std::string> tx = Begin(ops, hashes.size());
  ASSERT_TRUE(tx.ok()) << tx.status();
  ASSERT_TRUE(Stage(ops, *tx, hashes).ok());
  const uint64_t end = small.Bounds()->last;
  absl::StatusOr<uint64_t> committed = Commit(ops, *tx);
  EXPECT_EQ(committed.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(committed.status().message(),
              HasSubstr("even with its placements stored beside the log"));
  EXPECT_TRUE(Held(ops, hashes).empty());
  EXPECT_EQ(small.Bounds()->last, end);
  // The payload it stored is removed again.
  EXPECT_TRUE(store.payload_ids().empty());
}

TEST_F(WriteThroughTest, AReplicaThatDoesNotApplyAnswersUnavailable) {
  Replica replica(log_, /*timeout=*/50ms, /*start=*/false);
  v1::ConfigureExpectedWorkersResponse configured;
  const absl::Status s =
      replica.writes.Configure(ConfigureStream(), &configured).Wait();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("within 50 ms"));
  // The record is in the log all the same.
  EXPECT_EQ(log_.Bounds()->last, 1u);
}

TEST_F(WriteThroughTest, AStagedCommitOutsideACaptureIsRefused) {
  // The replica's Indexer never installs a commit out of log order.
  Replica replica(log_);
  IndexOperations& direct = replica.indexer.operations();
  v1::ConfigureExpectedWorkersResponse configured;
  ASSERT_TRUE(
      replica.writes.Configure(ConfigureStream(), &configured).Wait().ok());
  absl::StatusOr<std::string> tx = Begin(direct, 1);
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(Stage(direct, *tx, {5}).ok());
  EXPECT_FALSE(Commit(direct, *tx).ok());
  EXPECT_TRUE(Held(direct, {5}).empty());
}

TEST(AppliedOutcomesTest, PositionsPassedWithoutAResultAreUnknown) {
  AppliedOutcomes outcomes;
  const AppliedOutcomes::Watch watch(outcomes);
  outcomes.Applied(1, RecordResult{});
  outcomes.Skipped(5);
  EXPECT_TRUE(outcomes.WaitFor(1, 0ms).ok());
  EXPECT_EQ(outcomes.WaitFor(3, 0ms).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(outcomes.WaitFor(6, 1ms).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(outcomes.passed(), 5u);
}

}  // namespace write_through_test
}  // namespace kvindexer::replica
