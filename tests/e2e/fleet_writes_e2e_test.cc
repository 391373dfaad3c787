// Line-A writes through fleet replicas, end to end (docs/fleet.md, "Writes
// through a replica" and "One epoch per log"): a real nats-server and two
// real kv-indexer-server replicas of one log. A Configure, a staged
// snapshot (Begin, Append, Commit) and an InvalidateWorker sent to replica
// A are seen on replica B; both report the same indexer epoch, which a
// restart keeps; a seed-era write, and with KV_INDEXER_FLEET_LINE_A_WRITES=0
// every write, is refused.
//
// No sleeps as synchronisation: effects are awaited in bounded loops.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/fleet_e2e_harness.h"
#include "tests/e2e/fleet_replicas_fixture.h"
#include "tests/support/server_process.h"

namespace kvindexer::bridge::testing {
// Named, not anonymous: the unity build joins test files.
namespace fleet_writes_e2e_test {

using ::kvindexer::test_support::WaitUntil;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
namespace v1 = ::kv_indexer::v1;

constexpr char kNamespace[] = "ns";
constexpr char kWorker[] = "w-line-a";
constexpr uint32_t kPageSize = 16;
const std::vector<int64_t> kHashes = {701, 702, 703};

std::unique_ptr<grpc::ClientContext> CallContext() {
  auto context = std::make_unique<grpc::ClientContext>();
  // Longer than the replica's own 10 s wait for its reader.
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::seconds(15));
  return context;
}

void SetStream(v1::StreamId* id) {
  id->set_namespace_(kNamespace);
  id->set_worker_id(kWorker);
  id->set_dp_rank(0);
}

v1::ConfigureExpectedWorkersRequest ConfigureLineA() {
  v1::ConfigureExpectedWorkersRequest req;
  v1::ExpectedWorker* w = req.add_workers();
  SetStream(w->mutable_stream_id());
  w->set_worker_address("http://10.0.0.9:8000");
  w->set_page_size(kPageSize);
  return req;
}

// The stream's entry in `replica`'s ListWorkers; nullopt when absent or
// the call fails.
std::optional<::kvindexer::admin::v1::WorkerInfo> StreamInfo(
    FleetReplica& replica) {
  const auto listed = replica.ListWorkers();
  if (!listed.has_value()) return std::nullopt;
  for (const auto& w : listed->workers()) {
    if (w.namespace_() == kNamespace && w.worker_id() == kWorker) return w;
  }
  return std::nullopt;
}

// How many of kHashes `replica` holds, by MatchExternalKv; -1 on failure.
int HeldCount(FleetReplica& replica) {
  v1::MatchExternalKvRequest req;
  for (int64_t h : kHashes) req.add_hashes(h);
  v1::MatchExternalKvResponse resp;
  if (!replica.stub().MatchExternalKv(CallContext().get(), req, &resp).ok()) {
    return -1;
  }
  int held = 0;
  for (const auto& m : resp.matches()) {
    for (const auto& t : m.hashes_by_tier()) held += t.hashes_size();
  }
  return held;
}

class FleetWritesE2eTest : public FleetReplicasTest {
 protected:
  std::string Epoch(FleetReplica& replica) {
    const auto stats = replica.Stats();
    EXPECT_TRUE(stats.has_value());
    return stats.has_value() ? stats->indexer_epoch() : "";
  }
};

// F37, second half.
TEST_F(FleetWritesE2eTest, TwoReplicasOfOneLogReportOneEpoch) {
  FleetReplica* started_a = StartReplica();
  FleetReplica* started_b = StartReplica();
  ASSERT_NE(started_a, nullptr);
  ASSERT_NE(started_b, nullptr);
  FleetReplica& a = *started_a;
  FleetReplica& b = *started_b;
  const std::string epoch = Epoch(a);
  EXPECT_THAT(epoch, MatchesRegex("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-"
                                  "[0-9a-f]{4}-[0-9a-f]{12}"));
  EXPECT_EQ(Epoch(b), epoch);
  // A restarted replica still presents the log's epoch.
  a.Kill();
  FleetReplica* again = StartReplica();
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(Epoch(*again), epoch);
}

// F38, with the line-A Configure and InvalidateWorker around it.
TEST_F(FleetWritesE2eTest, WritesSentToOneReplicaAreSeenOnTheOther) {
  FleetReplica* started_a = StartReplica();
  FleetReplica* started_b = StartReplica();
  ASSERT_NE(started_a, nullptr);
  ASSERT_NE(started_b, nullptr);
  FleetReplica& a = *started_a;
  FleetReplica& b = *started_b;
  const std::string epoch = Epoch(a);

  v1::ConfigureExpectedWorkersResponse configured;
  grpc::Status s = a.stub().ConfigureExpectedWorkers(
      CallContext().get(), ConfigureLineA(), &configured);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(configured.total_workers(), 1u);
  EXPECT_EQ(configured.indexer_epoch(), epoch);
  ASSERT_TRUE(WaitUntil([&] { return StreamInfo(b).has_value(); }, kFleetBound))
      << "replica B never listed the stream configured through A";
  // Heartbeats, the same list again to the replica that wrote it (its
  // answer came once it had applied the record, so it has read the whole
  // log), append nothing to it.
  const absl::StatusOr<uint64_t> end = FleetLogEnd(log_);
  ASSERT_TRUE(end.ok()) << end.status();
  for (int i = 0; i < 4; ++i) {
    v1::ConfigureExpectedWorkersResponse again;
    s = a.stub().ConfigureExpectedWorkers(CallContext().get(), ConfigureLineA(),
                                          &again);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(again.SerializeAsString(), configured.SerializeAsString());
  }
  EXPECT_EQ(FleetLogEnd(log_).value_or(0), *end);

  v1::BeginExternalKvSnapshotRequest begin;
  SetStream(begin.mutable_stream_id());
  begin.set_worker_address("http://10.0.0.9:8000");
  begin.set_worker_epoch("e1");
  begin.set_applied_seq(42);
  begin.mutable_metadata()->set_worker_generation("g1");
  begin.mutable_metadata()->set_page_size(kPageSize);
  begin.set_expected_placements(kHashes.size());
  v1::BeginExternalKvSnapshotResponse begun;
  s = a.stub().BeginExternalKvSnapshot(CallContext().get(), begin, &begun);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(begun.indexer_epoch(), epoch);
  v1::AppendExternalKvSnapshotRequest append;
  append.set_transaction_id(begun.transaction_id());
  for (int64_t h : kHashes) {
    v1::ExternalKvSnapshotPlacement* p = append.add_placements();
    p->set_block_hash(h);
    p->set_tier(v1::TIER_HBM);
    p->set_component_mask(1);
    p->set_block_size(kPageSize);
  }
  v1::AppendExternalKvSnapshotResponse appended;
  s = a.stub().AppendExternalKvSnapshot(CallContext().get(), append, &appended);
  ASSERT_TRUE(s.ok()) << s.error_message();
  // The transaction lives on A only.
  v1::CommitExternalKvSnapshotRequest commit;
  commit.set_transaction_id(begun.transaction_id());
  v1::CommitExternalKvSnapshotResponse committed;
  EXPECT_EQ(
      b.stub()
          .CommitExternalKvSnapshot(CallContext().get(), commit, &committed)
          .error_code(),
      grpc::StatusCode::NOT_FOUND);
  s = a.stub().CommitExternalKvSnapshot(CallContext().get(), commit,
                                        &committed);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(committed.applied_seq(), 42u);
  // A holds it when it answers; B once it has read the record.
  EXPECT_EQ(HeldCount(a), 3);
  ASSERT_TRUE(WaitUntil([&] { return HeldCount(b) == 3; }, kFleetBound))
      << "replica B holds " << HeldCount(b) << " of the committed hashes";
  const auto info = StreamInfo(b);
  ASSERT_TRUE(info.has_value());
  EXPECT_TRUE(info->ready());
  EXPECT_EQ(info->worker_generation(), "g1");

  v1::InvalidateWorkerRequest invalidate;
  SetStream(invalidate.mutable_stream_id());
  v1::InvalidateWorkerResponse invalidated;
  s = a.stub().InvalidateWorker(CallContext().get(), invalidate, &invalidated);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(invalidated.ready_workers(), 0u);
  EXPECT_EQ(invalidated.indexer_epoch(), epoch);
  ASSERT_TRUE(WaitUntil(
      [&] {
        const auto now = StreamInfo(b);
        return now.has_value() && !now->ready() && HeldCount(b) == 0;
      },
      kFleetBound))
      << "replica B kept the invalidated stream";

  // A seed-era write is still refused.
  v1::ApplyExternalKvBatchRequest seed_era;
  seed_era.set_worker_id("seed-era");
  v1::ApplyExternalKvBatchResponse applied;
  s = a.stub().ApplyExternalKvBatch(CallContext().get(), seed_era, &applied);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("KV_INDEXER_EVENT_SOURCE"));
}

// A replica that starts on a snapshot of the log's end holds exactly that
// position: it answers a heartbeat itself before any record follows.
TEST_F(FleetWritesE2eTest,
       AReplicaStartedOnASnapshotOfTheEndAnswersHeartbeats) {
  FleetReplica* started_a =
      StartReplica({{"KV_INDEXER_FLEET_SNAPSHOT_INTERVAL_MS", "1000"}});
  ASSERT_NE(started_a, nullptr);
  v1::ConfigureExpectedWorkersResponse configured;
  grpc::Status s = started_a->stub().ConfigureExpectedWorkers(
      CallContext().get(), ConfigureLineA(), &configured);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const absl::StatusOr<uint64_t> end = FleetLogEnd(log_);
  ASSERT_TRUE(end.ok()) << end.status();
  std::optional<double> snapshot;
  ASSERT_TRUE(WaitUntil(
      [&] {
        snapshot = started_a->Metric("kvindexer_fleet_snapshot_last_position");
        return snapshot.value_or(0) >= static_cast<double>(*end);
      },
      kFleetBound))
      << "no snapshot of position " << *end << " (last "
      << snapshot.value_or(-1) << ")";

  FleetReplica* started_b = StartReplica();
  ASSERT_NE(started_b, nullptr);
  FleetReplica& b = *started_b;
  ASSERT_GE(b.Metric("kvindexer_fleet_snapshot_loaded_position").value_or(0),
            static_cast<double>(*end));
  for (int i = 0; i < 3; ++i) {
    v1::ConfigureExpectedWorkersResponse again;
    s = b.stub().ConfigureExpectedWorkers(CallContext().get(), ConfigureLineA(),
                                          &again);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(again.total_workers(), 1u);
  }
  EXPECT_EQ(FleetLogEnd(log_).value_or(0), *end);
}

TEST_F(FleetWritesE2eTest, LineAWritesCanBeTurnedOff) {
  FleetReplica* a = StartReplica({{"KV_INDEXER_FLEET_LINE_A_WRITES", "0"}});
  ASSERT_NE(a, nullptr);
  v1::ConfigureExpectedWorkersResponse configured;
  const grpc::Status s = a->stub().ConfigureExpectedWorkers(
      CallContext().get(), ConfigureLineA(), &configured);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("KV_INDEXER_EVENT_SOURCE"));
}

}  // namespace fleet_writes_e2e_test
}  // namespace kvindexer::bridge::testing
