// A staged snapshot too large for one record of the JetStream event log, on
// a real nats-server: committed through one replica's write-through, it is
// stored as a payload in <stream>_SNAPSHOTS, and a second replica, on a
// connection of its own, installs it from the log. Skipped when no
// nats-server is installed.
#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/indexer.h"
#include "core/stream_key.h"
#include "fleet/fleet_config.h"
#include "fleet/jetstream_fleet.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "replica/applied_outcomes.h"
#include "replica/commit_capture_log.h"
#include "replica/commit_payload.h"
#include "replica/log_follower.h"
#include "replica/write_through.h"
#include "tests/support/jetstream_test_stream.h"
#include "tests/support/model_backend.h"
#include "tests/support/nats_server.h"
#include "tests/support/requests.h"
#include "tests/support/server_process.h"

namespace kvindexer::replica {
namespace jetstream_payload_test {

using namespace std::chrono_literals;
using test_support::ModelBackend;
using test_support::NatsServer;
using test_support::WaitUntil;
namespace v1 = ::kv_indexer::v1;

const StreamKey kStream{"ns", "big", 0};
constexpr uint32_t kPageSize = 16;
// About 10 bytes each inline: well above a default nats-server's 1 MiB
// message limit, so the commit needs a payload of two parts or more.
constexpr int64_t kPlacements = 150000;
constexpr int64_t kPerAppend = 10000;

// One replica of the fleet: its own connection and stores, an Indexer that
// follows the log, and the write-through over them.
struct Replica {
  Replica(fleet::FleetStores stores_in, std::string name)
      : stores(std::move(stores_in)),
        follower(*stores.log, indexer, Options(&outcomes, &*stores.snapshots)),
        writes(indexer, *stores.log, outcomes,
               WriteThroughOptions{.producer = std::move(name),
                                   .limits = RequestLimits{},
                                   .payloads = stores.snapshots.get()}) {
    indexer.durable_state().AttachLog(&capture);
    follower.Start();
  }
  ~Replica() { follower.Stop(); }

  static LogFollowerOptions Options(AppliedOutcomes* outcomes,
                                    fleet::SnapshotStore* payloads) {
    LogFollowerOptions options;
    options.read_wait = 50ms;
    options.retry_initial = 10ms;
    options.retry_cap = 200ms;
    options.outcomes = outcomes;
    options.payloads = payloads;
    return options;
  }

  fleet::FleetStores stores;
  ModelBackend backend;
  Indexer indexer{&backend};
  CommitCaptureLog capture;
  AppliedOutcomes outcomes;
  LogFollower follower;
  WriteThrough writes;
};

int64_t HashAt(int64_t i) { return (i + 1) * 2654435761LL; }

// How many of every 1000th placement `indexer` holds.
size_t SampledHeld(Indexer& indexer) {
  std::vector<int64_t> probe;
  for (int64_t i = 0; i < kPlacements; i += 1000) probe.push_back(HashAt(i));
  v1::MatchExternalKvResponse resp;
  EXPECT_TRUE(indexer.operations()
                  .Match(test_support::MatchRequest(probe), &resp)
                  .ok());
  size_t n = 0;
  for (const v1::ExternalKvNodeMatch& m : resp.matches()) {
    for (const v1::TierHashes& t : m.hashes_by_tier()) n += t.hashes_size();
  }
  return n;
}

TEST(JetStreamPayloadTest, ACommitTooLargeForOneRecordReachesAnotherReplica) {
  KVINDEXER_SKIP_WITHOUT_NATS_SERVER();
  absl::StatusOr<NatsServer*> nats = test_support::SharedNatsServer();
  ASSERT_TRUE(nats.ok()) << nats.status();
  const fleet::EventLogConfig config =
      test_support::FreshEventLogConfig({(*nats)->url()}, "PAYLOAD");
  absl::StatusOr<fleet::FleetStores> stores_a =
      fleet::OpenJetStreamFleet(config);
  ASSERT_TRUE(stores_a.ok()) << stores_a.status();
  absl::StatusOr<fleet::FleetStores> stores_b =
      fleet::OpenJetStreamFleet(config);
  ASSERT_TRUE(stores_b.ok()) << stores_b.status();
  Replica a(*std::move(stores_a), "replica-a");
  Replica b(*std::move(stores_b), "replica-b");
  IndexOperations& ops = a.writes;

  v1::ConfigureExpectedWorkersRequest configure;
  v1::ExpectedWorker* w = configure.add_workers();
  SetStreamId(kStream, w->mutable_stream_id());
  w->set_worker_address("10.0.0.1:9000");
  w->set_page_size(kPageSize);
  v1::ConfigureExpectedWorkersResponse configured;
  ASSERT_TRUE(ops.Configure(configure, &configured).Wait().ok());

  v1::BeginExternalKvSnapshotRequest begin;
  SetStreamId(kStream, begin.mutable_stream_id());
  begin.set_worker_address("10.0.0.2:9000");
  begin.set_worker_epoch("e1");
  begin.set_applied_seq(7);
  begin.mutable_metadata()->set_worker_generation("g1");
  begin.mutable_metadata()->set_page_size(kPageSize);
  begin.set_expected_placements(kPlacements);
  v1::BeginExternalKvSnapshotResponse begun;
  ASSERT_TRUE(ops.Begin(begin, &begun).Wait().ok());
  for (int64_t from = 0; from < kPlacements; from += kPerAppend) {
    v1::AppendExternalKvSnapshotRequest append;
    append.set_transaction_id(begun.transaction_id());
    for (int64_t i = from; i < std::min(kPlacements, from + kPerAppend); ++i) {
      v1::ExternalKvSnapshotPlacement* p = append.add_placements();
      p->set_block_hash(HashAt(i));
      p->set_tier(v1::TierType(kTierHbm));
      p->set_component_mask(1);
      p->set_block_size(kPageSize);
    }
    v1::AppendExternalKvSnapshotResponse appended;
    const absl::Status s = ops.Append(append, &appended).Wait();
    ASSERT_TRUE(s.ok()) << s;
  }
  v1::CommitExternalKvSnapshotRequest commit;
  commit.set_transaction_id(begun.transaction_id());
  v1::CommitExternalKvSnapshotResponse committed;
  const absl::Status s = ops.Commit(commit, &committed).Wait();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(committed.applied_seq(), 7u);
  EXPECT_EQ(SampledHeld(a.indexer), static_cast<size_t>(kPlacements / 1000));

  // The log holds the commit in the payload form, in more than one part.
  absl::StatusOr<fleet::LogBounds> bounds = a.stores.log->Bounds();
  ASSERT_TRUE(bounds.ok()) << bounds.status();
  absl::StatusOr<std::vector<fleet::LoggedRecord>> last =
      a.stores.log->Read(bounds->last, 1, 0ms);
  ASSERT_TRUE(last.ok() && last->size() == 1u);
  ::kvindexer::fleet::v1::LogRecord record;
  ASSERT_TRUE(record.ParseFromString(last->front().payload));
  ASSERT_TRUE(IsPayloadCommit(record));
  EXPECT_EQ(record.payload_placements(), static_cast<uint64_t>(kPlacements));
  EXPECT_GE(record.payload_parts(), 2u);

  // Replica B reads it and fetches the payload on its own connection.
  ASSERT_TRUE(WaitUntil(
      [&] { return b.follower.applied_position() >= bounds->last; }, 30s))
      << b.follower.NotReadyReason().value_or("");
  EXPECT_EQ(SampledHeld(b.indexer), static_cast<size_t>(kPlacements / 1000));
  const std::optional<WorkerRecord> worker =
      b.indexer.operator_view().WorkerState(EncodeStreamKey(kStream));
  ASSERT_TRUE(worker.has_value());
  ASSERT_TRUE(worker->checkpoint.has_value());
  EXPECT_EQ(worker->checkpoint->seq, 7u);
  EXPECT_EQ(b.follower.counts().undecodable, 0u);
}

}  // namespace jetstream_payload_test
}  // namespace kvindexer::replica
