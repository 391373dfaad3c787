// Fleet mode's stores on one real nats-server (fleet/jetstream_fleet.h):
// rounds of WriteSnapshotRound (replica/snapshot_writer.h) over the JetStream
// event log and snapshot store write snapshots, delete the oldest and trim
// the log; the newest snapshot, loaded into a fresh replica, holds what a
// replica that applied the whole log holds, also after the server
// restarted; and a dead server makes every call fail UNAVAILABLE until
// it is back. Skipped when no nats-server is installed.
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fleet/fleet_config.h"
#include "fleet/jetstream_fleet.h"
#include "gtest/gtest.h"
#include "replica/record_applier.h"
#include "replica/snapshot_reader.h"
#include "replica/snapshot_writer.h"
#include "tests/support/jetstream_test_stream.h"
#include "tests/support/nats_server.h"
#include "tests/support/server_process.h"
#include "tests/support/snapshot_test_support.h"

namespace kvindexer::replica {
namespace jetstream_fleet_test {

using ::kvindexer::fleet::v1::SnapshotManifest;
using snapshot_test_support::Entry;
using snapshot_test_support::LogGenerator;
using snapshot_test_support::Replica;
using test_support::NatsServer;

void AppendAll(fleet::EventLog& log, const std::vector<Entry>& entries,
               size_t from, size_t to) {
  for (size_t i = from; i < to; ++i) {
    absl::StatusOr<fleet::AppendAck> ack =
        log.Append(entries[i].worker, entries[i].payload, "", std::nullopt);
    ASSERT_TRUE(ack.ok()) << ack.status();
    ASSERT_EQ(ack->position, i + 1);
  }
}

SnapshotRound Round(fleet::FleetStores& fleet) {
  const std::atomic<bool> stop{false};
  SnapshotRoundOptions options;
  options.writer = "replica-a";
  options.keep = 2;
  options.read_batch = 7;  // several reads per round
  absl::StatusOr<SnapshotRound> round =
      WriteSnapshotRound(*fleet.log, *fleet.snapshots, options, stop);
  EXPECT_TRUE(round.ok()) << round.status();
  return round.value_or(SnapshotRound{});
}

std::vector<uint64_t> Positions(fleet::SnapshotStore& store) {
  absl::StatusOr<std::vector<SnapshotManifest>> all = store.List();
  EXPECT_TRUE(all.ok()) << all.status();
  std::vector<uint64_t> out;
  if (all.ok()) {
    for (const SnapshotManifest& m : *all) out.push_back(m.position());
  }
  return out;
}

// The newest snapshot's contents, loaded into a fresh replica.
std::string LoadNewest(fleet::SnapshotStore& store,
                       uint64_t expected_position) {
  absl::StatusOr<std::optional<SnapshotManifest>> newest =
      NewestSnapshot(store);
  EXPECT_TRUE(newest.ok()) << newest.status();
  if (!newest.ok() || !newest->has_value()) return "(no snapshot)";
  EXPECT_EQ((*newest)->position(), expected_position);
  Replica replica;
  const absl::Status loaded = ReadSnapshotChunks(
      store, **newest, [&](const state::v1::CheckpointChunk& chunk) {
        return replica.indexer.durable_state().Restore(chunk);
      });
  EXPECT_TRUE(loaded.ok()) << loaded;
  return replica.Contents();
}

TEST(JetStreamFleetTest, SnapshotRoundsWriteRetainAndTrimOnARealServer) {
  KVINDEXER_SKIP_WITHOUT_NATS_SERVER();
  absl::StatusOr<std::unique_ptr<NatsServer>> nats = NatsServer::Start();
  ASSERT_TRUE(nats.ok()) << nats.status();
  fleet::EventLogConfig config =
      test_support::FreshEventLogConfig({(*nats)->url()}, "FLEET_E2E");
  absl::StatusOr<fleet::FleetStores> fleet = fleet::OpenJetStreamFleet(config);
  ASSERT_TRUE(fleet.ok()) << fleet.status();
  ASSERT_NE(fleet->lease, nullptr);
  ASSERT_TRUE(fleet->lease->Create("replica-a").ok());

  const std::vector<Entry> entries = LogGenerator(20261202).Generate(90);
  Replica direct;
  for (size_t i = 0; i < entries.size(); ++i) {
    const fleet::LoggedRecord record{.position = i + 1,
                                     .worker_id = entries[i].worker,
                                     .payload = entries[i].payload};
    ASSERT_TRUE(ApplyLogRecordAfter(direct.indexer, &direct.applied, record)
                    .has_value());
  }

  // Round 1: one snapshot, the log is not trimmed before two exist.
  AppendAll(*fleet->log, entries, 0, 30);
  SnapshotRound round = Round(*fleet);
  EXPECT_TRUE(round.written);
  EXPECT_EQ(round.records_applied, 30u);
  EXPECT_EQ(round.trimmed_before, 1u);
  EXPECT_EQ(Positions(*fleet->snapshots), (std::vector<uint64_t>{30}));

  // Round 2: built on the first; two exist, the log keeps what follows
  // the oldest.
  AppendAll(*fleet->log, entries, 30, 60);
  round = Round(*fleet);
  EXPECT_TRUE(round.written);
  EXPECT_EQ(round.records_applied, 30u);
  EXPECT_EQ(round.snapshots_deleted, 0u);
  EXPECT_EQ(round.trimmed_before, 31u);
  EXPECT_EQ(Positions(*fleet->snapshots), (std::vector<uint64_t>{30, 60}));

  // Round 3: the oldest goes and the log is trimmed up to the next.
  AppendAll(*fleet->log, entries, 60, 90);
  round = Round(*fleet);
  EXPECT_TRUE(round.written);
  EXPECT_EQ(round.snapshots_deleted, 1u);
  EXPECT_EQ(round.trimmed_before, 61u);
  EXPECT_EQ(Positions(*fleet->snapshots), (std::vector<uint64_t>{60, 90}));
  absl::StatusOr<fleet::LogBounds> bounds = fleet->log->Bounds();
  ASSERT_TRUE(bounds.ok()) << bounds.status();
  EXPECT_EQ(bounds->first, 61u);
  EXPECT_EQ(bounds->last, 90u);

  // Nothing new: no snapshot.
  round = Round(*fleet);
  EXPECT_FALSE(round.written);

  const std::string whole_log = direct.Contents();
  ASSERT_FALSE(whole_log.empty());
  EXPECT_EQ(LoadNewest(*fleet->snapshots, 90), whole_log);

  // The server restarts: a replica that connects afresh finds the same.
  ASSERT_TRUE((*nats)->Restart().ok());
  absl::StatusOr<fleet::FleetStores> reopened =
      fleet::OpenJetStreamFleet(config);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ(Positions(*reopened->snapshots), (std::vector<uint64_t>{60, 90}));
  EXPECT_EQ(LoadNewest(*reopened->snapshots, 90), whole_log);
  absl::StatusOr<std::optional<fleet::LeaseRegister::Entry>> lease =
      reopened->lease->Get();
  ASSERT_TRUE(lease.ok() && lease->has_value()) << lease.status();
  EXPECT_EQ((*lease)->value, "replica-a");
}

// Opening waits out a server that does not answer yet, a bounded number
// of times: here it hangs (SIGSTOP) until the first wait lets it go on.
TEST(JetStreamFleetTest, OpeningRetriesWhileTheServerCannotAnswer) {
  KVINDEXER_SKIP_WITHOUT_NATS_SERVER();
  absl::StatusOr<std::unique_ptr<NatsServer>> nats = NatsServer::Start();
  ASSERT_TRUE(nats.ok()) << nats.status();
  fleet::EventLogConfig config =
      test_support::FreshEventLogConfig({(*nats)->url()}, "FLEET_LATE");
  config.nats.timeout_ms = 300;

  ASSERT_TRUE((*nats)->Pause());
  fleet::FleetOpenRetry once;
  once.attempts = 1;
  absl::StatusOr<fleet::FleetStores> refused =
      fleet::OpenJetStreamFleet(config, once);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable)
      << refused.status();

  fleet::FleetOpenRetry retry;
  retry.attempts = 3;
  std::vector<std::chrono::milliseconds> waits;
  retry.wait = [&](std::chrono::milliseconds wait) {
    waits.push_back(wait);
    EXPECT_TRUE((*nats)->Resume());
  };
  absl::StatusOr<fleet::FleetStores> opened =
      fleet::OpenJetStreamFleet(config, retry);
  ASSERT_TRUE(opened.ok()) << opened.status();
  ASSERT_FALSE(waits.empty());
  EXPECT_EQ(waits.front(), retry.first_wait);
  EXPECT_TRUE(opened->lease->Get().ok());
}

TEST(JetStreamFleetTest, AnUnreachableServerIsUnavailableUntilItIsBack) {
  KVINDEXER_SKIP_WITHOUT_NATS_SERVER();
  absl::StatusOr<std::unique_ptr<NatsServer>> nats = NatsServer::Start();
  ASSERT_TRUE(nats.ok()) << nats.status();
  fleet::EventLogConfig config =
      test_support::FreshEventLogConfig({(*nats)->url()}, "FLEET_DOWN");
  config.nats.timeout_ms = 500;
  absl::StatusOr<fleet::FleetStores> fleet = fleet::OpenJetStreamFleet(config);
  ASSERT_TRUE(fleet.ok()) << fleet.status();
  absl::StatusOr<uint64_t> revision = fleet->lease->Create("replica-a");
  ASSERT_TRUE(revision.ok()) << revision.status();
  absl::StatusOr<std::unique_ptr<fleet::SnapshotStore::Writer>> writer =
      fleet->snapshots->Begin("s1");
  ASSERT_TRUE(writer.ok()) << writer.status();

  (*nats)->Kill();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(fleet->lease->Get().status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(fleet->lease->Create("replica-b").status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(fleet->lease->Update("replica-a", *revision).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(fleet->snapshots->List().status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(fleet->snapshots->Begin("s2").status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ((*writer)->AddPart("a").code(), absl::StatusCode::kUnavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));

  ASSERT_TRUE((*nats)->Restart().ok());
  // The connection comes back by itself. A write that failed UNAVAILABLE
  // may still land (the client resends what it buffered while
  // disconnected), as after a timeout: replica-b's create cannot, the
  // lease exists.
  absl::StatusOr<std::optional<fleet::LeaseRegister::Entry>> lease;
  ASSERT_TRUE(test_support::WaitUntil(
      [&] {
        lease = fleet->lease->Get();
        return lease.ok();
      },
      std::chrono::seconds(15), std::chrono::milliseconds(50)))
      << lease.status();
  ASSERT_TRUE(lease->has_value());
  EXPECT_EQ((*lease)->value, "replica-a");
  absl::StatusOr<uint64_t> renewed =
      fleet->lease->Update("replica-a", (*lease)->revision);
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_GT(*renewed, (*lease)->revision);
  writer->reset();
  const SnapshotManifest manifest = [] {
    SnapshotManifest m;
    m.set_id("s3");
    m.set_position(1);
    m.set_parts(1);
    return m;
  }();
  absl::StatusOr<std::unique_ptr<fleet::SnapshotStore::Writer>> again =
      fleet->snapshots->Begin("s3");
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_TRUE((*again)->AddPart("b").ok());
  ASSERT_TRUE((*again)->Commit(manifest).ok());
  EXPECT_EQ(Positions(*fleet->snapshots), (std::vector<uint64_t>{1}));
}

}  // namespace jetstream_fleet_test
}  // namespace kvindexer::replica
