// A replica's start from a snapshot (replica/replica_snapshot.h): the
// newest snapshot, then the log after it through the follower, give the
// index of a replica that read the whole log; a damaged snapshot falls
// back to the one before it, or an error naming it when none loads; a
// replica behind the trimmed log reloads the newest snapshot
// (ReloadNewestSnapshot); one that vanishes while it is read is replaced by
// what a new list finds.
#include "replica/replica_snapshot.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "durable/record_framing.h"
#include "fleet/memory_event_log.h"
#include "fleet/memory_snapshot_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "replica/log_follower.h"
#include "replica/snapshot_writer.h"
#include "tests/support/forged_snapshot.h"
#include "tests/support/forwarding_snapshot_store.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"
#include "tests/support/wait_until.h"

namespace kvindexer::replica {
namespace replica_snapshot_test {

using test_support::Batch;
using ::testing::HasSubstr;
using namespace std::chrono_literals;
using ::kvindexer::test_support::WaitUntil;

class ReplicaSnapshotTest : public ::testing::Test {
 protected:
  void Report(const std::string& worker, std::vector<int64_t> hashes,
              std::vector<int64_t> revoked = {}) {
    ::kvindexer::fleet::v1::LogRecord record;
    Batch batch(worker, "10.0.0.1:80");
    if (!hashes.empty()) batch.Report(kTierHbm, hashes);
    if (!revoked.empty()) batch.Revoke(kTierHbm, revoked);
    *record.mutable_apply() = batch;
    ASSERT_TRUE(
        log_.Append(worker, record.SerializeAsString(), "", std::nullopt).ok());
  }

  void WriteSnapshot() {
    SnapshotRoundOptions options;
    options.writer = "replica-a";
    const std::atomic<bool> stop{false};
    absl::StatusOr<SnapshotRound> round =
        WriteSnapshotRound(log_, store_, options, stop);
    ASSERT_TRUE(round.ok()) << round.status();
    ASSERT_TRUE(round->written);
  }

  // Writes the store's first snapshot and answers its manifest in *written.
  void WriteFirstSnapshot(::kvindexer::fleet::v1::SnapshotManifest* written) {
    ASSERT_NO_FATAL_FAILURE(WriteSnapshot());
    absl::StatusOr<std::vector<::kvindexer::fleet::v1::SnapshotManifest>> all =
        store_.List();
    ASSERT_TRUE(all.ok() && all->size() == 1);
    *written = all->front();
  }

  // Gives `indexer` the placement (worker, hash) at HBM by a seed-era
  // apply, as if a replica had applied it from the log.
  static void HoldDirectly(Indexer& indexer, const std::string& worker,
                           int64_t hash) {
    ::kv_indexer::v1::ApplyExternalKvBatchResponse resp;
    ASSERT_TRUE(
        indexer.operations()
            .Apply(Batch(worker, "10.0.0.1:80").Report(kTierHbm, {hash}), &resp)
            .Wait()
            .ok());
  }

  // (worker, hash) pairs the indexer holds among hashes 1..20.
  static std::set<std::pair<std::string, int64_t>> Held(Indexer& indexer) {
    ::kv_indexer::v1::MatchExternalKvResponse resp;
    EXPECT_TRUE(
        indexer.operations()
            .Match(test_support::MatchRequest(test_support::Range(1, 20)),
                   &resp)
            .ok());
    std::set<std::pair<std::string, int64_t>> out;
    for (const auto& match : resp.matches()) {
      for (const auto& tier : match.hashes_by_tier()) {
        for (int64_t h : tier.hashes()) out.insert({match.worker_id(), h});
      }
    }
    return out;
  }

  // A fresh replica that starts from the store and follows the log.
  struct Replica {
    test_support::ModelBackend backend;
    Indexer indexer{&backend};
    std::unique_ptr<LogFollower> follower;
  };

  fleet::MemoryEventLog log_;
  fleet::MemorySnapshotStore store_;
};

TEST_F(ReplicaSnapshotTest, NoSnapshotMeansTheWholeLog) {
  test_support::ModelBackend backend;
  Indexer indexer(&backend);
  absl::StatusOr<ReplicaStart> start = LoadNewestSnapshot(
      store_, indexer.durable_state(), indexer.operator_view());
  ASSERT_TRUE(start.ok()) << start.status();
  EXPECT_FALSE(start->snapshot.has_value());
  EXPECT_EQ(start->follow_from, 1u);
}

TEST_F(ReplicaSnapshotTest, SnapshotThenTheLogAfterItEqualsTheWholeLog) {
  Report("w1", {1, 2, 3});
  Report("w2", {4, 5});
  WriteSnapshot();
  Report("w1", {6}, {1});
  Report("w3", {7});
  ASSERT_TRUE(log_.TrimBefore(3).ok());  // what the snapshot holds is gone

  Replica replica;
  absl::StatusOr<ReplicaStart> start = LoadNewestSnapshot(
      store_, replica.indexer.durable_state(), replica.indexer.operator_view());
  ASSERT_TRUE(start.ok()) << start.status();
  ASSERT_TRUE(start->snapshot.has_value());
  EXPECT_EQ(start->follow_from, 3u);
  LogFollowerOptions options;
  options.start_position = start->follow_from;
  options.read_wait = 20ms;
  replica.follower =
      std::make_unique<LogFollower>(log_, replica.indexer, options);
  replica.follower->Start();
  ASSERT_TRUE(WaitUntil(
      [&] { return replica.follower->applied_position() >= 4; }, 10s, 1ms));
  replica.follower->Stop();
  EXPECT_EQ(replica.follower->counts().trimmed, 0u);
  const std::set<std::pair<std::string, int64_t>> expected = {
      {"w1", 2}, {"w1", 3}, {"w1", 6}, {"w2", 4}, {"w2", 5}, {"w3", 7}};
  EXPECT_EQ(Held(replica.indexer), expected);
}

// A replica that fell behind the trimmed log (it was stopped, or cut off,
// while snapshots were written and the log trimmed behind them) empties its
// index into the newest snapshot and ends as a replica that read it all,
// without what it held and the log no longer did.
TEST_F(ReplicaSnapshotTest, AReplicaBehindTheTrimmedLogReloadsTheSnapshot) {
  Report("w1", {1, 2, 3});
  Report("w2", {4, 5});
  Replica replica;
  LogFollowerOptions options;
  options.read_wait = 20ms;
  replica.follower =
      std::make_unique<LogFollower>(log_, replica.indexer, options);
  replica.follower->Start();
  ASSERT_TRUE(WaitUntil(
      [&] { return replica.follower->applied_position() >= 2; }, 10s, 1ms));
  replica.follower->Stop();
  // Something the log never held, which a reload must not keep.
  ::kv_indexer::v1::ApplyExternalKvBatchResponse resp;
  ASSERT_TRUE(
      replica.indexer.operations()
          .Apply(Batch("stray", "10.0.0.9:80").Report(kTierHbm, {9}), &resp)
          .Wait()
          .ok());

  Report("w1", {6}, {1});
  Report("w2", {}, {4, 5});
  WriteSnapshot();  // at position 4
  Report("w3", {7});
  ASSERT_TRUE(log_.TrimBefore(5).ok());

  options.start_position = 3;
  options.reload = [&]() -> absl::StatusOr<std::optional<uint64_t>> {
    auto loaded = ReloadNewestSnapshot(store_, replica.indexer.durable_state(),
                                       replica.indexer.operator_view());
    if (!loaded.ok()) return loaded.status();
    if (!loaded->has_value()) return std::nullopt;
    return (*loaded)->position();
  };
  replica.follower =
      std::make_unique<LogFollower>(log_, replica.indexer, options);
  replica.follower->Start();
  ASSERT_TRUE(WaitUntil(
      [&] { return replica.follower->applied_position() >= 5; }, 10s, 1ms));
  replica.follower->Stop();
  EXPECT_EQ(replica.follower->counts().reloads, 1u);
  EXPECT_EQ(replica.follower->counts().trimmed, 0u);
  const std::set<std::pair<std::string, int64_t>> expected = {
      {"w1", 2}, {"w1", 3}, {"w1", 6}, {"w3", 7}};
  EXPECT_EQ(Held(replica.indexer), expected);
  EXPECT_FALSE(
      replica.indexer.operator_view().WorkerState("stray").has_value());
  EXPECT_TRUE(replica.indexer.operator_view().WorkerState("w2").has_value());
}

TEST_F(ReplicaSnapshotTest, AReloadWithoutASnapshotLeavesTheIndexAlone) {
  test_support::ModelBackend backend;
  Indexer indexer(&backend);
  ASSERT_NO_FATAL_FAILURE(HoldDirectly(indexer, "w1", 1));
  auto reloaded = ReloadNewestSnapshot(store_, indexer.durable_state(),
                                       indexer.operator_view());
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  EXPECT_FALSE(reloaded->has_value());
  store_.SetUnavailable(true);
  EXPECT_EQ(ReloadNewestSnapshot(store_, indexer.durable_state(),
                                 indexer.operator_view())
                .status()
                .code(),
            absl::StatusCode::kUnavailable);
  const std::set<std::pair<std::string, int64_t>> expected = {{"w1", 1}};
  EXPECT_EQ(Held(indexer), expected);
}

// A snapshot in a newer checkpoint format is refused, not passed over: the
// replica stops with an error naming both versions and holds nothing of it.
// One written before manifests said their version is read.
TEST_F(ReplicaSnapshotTest, ASnapshotOfANewerFormatIsRefused) {
  Report("w1", {1});
  ::kvindexer::fleet::v1::SnapshotManifest written;
  ASSERT_NO_FATAL_FAILURE(WriteFirstSnapshot(&written));
  EXPECT_EQ(written.format_version(), durable::kFormatVersion);
  ::kvindexer::fleet::v1::SnapshotManifest newer = written;
  newer.set_id("newer");
  newer.set_position(written.position() + 1);
  newer.set_format_version(durable::kFormatVersion + 1);
  ASSERT_TRUE(test_support::CommitForgedSnapshot(store_, written, newer).ok());
  {
    test_support::ModelBackend backend;
    Indexer indexer(&backend);
    absl::StatusOr<ReplicaStart> start = LoadNewestSnapshot(
        store_, indexer.durable_state(), indexer.operator_view());
    ASSERT_FALSE(start.ok());
    EXPECT_EQ(start.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(start.status().message(), HasSubstr("\"newer\""));
    EXPECT_THAT(
        start.status().message(),
        HasSubstr(absl::StrCat("format ", durable::kFormatVersion + 1,
                               ", newer than the ", durable::kFormatVersion)));
    EXPECT_TRUE(Held(indexer).empty());
  }
  {
    // A running replica that must reload keeps what it holds.
    test_support::ModelBackend backend;
    Indexer indexer(&backend);
    ASSERT_NO_FATAL_FAILURE(HoldDirectly(indexer, "w9", 2));
    auto reloaded = ReloadNewestSnapshot(store_, indexer.durable_state(),
                                         indexer.operator_view());
    EXPECT_EQ(reloaded.status().code(), absl::StatusCode::kFailedPrecondition);
    const std::set<std::pair<std::string, int64_t>> kept = {{"w9", 2}};
    EXPECT_EQ(Held(indexer), kept);
  }

  ::kvindexer::fleet::v1::SnapshotManifest unversioned = written;
  unversioned.set_id("unversioned");
  unversioned.set_position(written.position() + 2);
  unversioned.clear_format_version();
  ASSERT_TRUE(
      test_support::CommitForgedSnapshot(store_, written, unversioned).ok());
  test_support::ModelBackend backend;
  Indexer indexer(&backend);
  absl::StatusOr<ReplicaStart> start = LoadNewestSnapshot(
      store_, indexer.durable_state(), indexer.operator_view());
  ASSERT_TRUE(start.ok()) << start.status();
  ASSERT_TRUE(start->snapshot.has_value());
  EXPECT_EQ(start->snapshot->id(), "unversioned");
  const std::set<std::pair<std::string, int64_t>> expected = {{"w1", 1}};
  EXPECT_EQ(Held(indexer), expected);
}

// A damaged newest snapshot is passed over for the one before it; with
// none that loads, the error names the newest.
TEST_F(ReplicaSnapshotTest, ADamagedSnapshotFallsBackToTheOneBeforeIt) {
  Report("w1", {1});
  ::kvindexer::fleet::v1::SnapshotManifest intact;
  ASSERT_NO_FATAL_FAILURE(WriteFirstSnapshot(&intact));
  // A newer manifest that claims more chunks than its parts hold.
  ::kvindexer::fleet::v1::SnapshotManifest forged = intact;
  forged.set_id("forged");
  forged.set_position(forged.position() + 1);
  forged.set_chunks(forged.chunks() + 5);
  ASSERT_TRUE(test_support::CommitForgedSnapshot(store_, intact, forged).ok());
  {
    test_support::ModelBackend backend;
    Indexer indexer(&backend);
    absl::StatusOr<ReplicaStart> start = LoadNewestSnapshot(
        store_, indexer.durable_state(), indexer.operator_view());
    ASSERT_TRUE(start.ok()) << start.status();
    ASSERT_TRUE(start->snapshot.has_value());
    EXPECT_EQ(start->snapshot->id(), intact.id());
    EXPECT_EQ(start->follow_from, intact.position() + 1);
    const std::set<std::pair<std::string, int64_t>> expected = {{"w1", 1}};
    EXPECT_EQ(Held(indexer), expected);
    // A reload passes over it the same way.
    auto reloaded = ReloadNewestSnapshot(store_, indexer.durable_state(),
                                         indexer.operator_view());
    ASSERT_TRUE(reloaded.ok()) << reloaded.status();
    ASSERT_TRUE(reloaded->has_value());
    EXPECT_EQ((*reloaded)->id(), intact.id());
    EXPECT_EQ(Held(indexer), expected);
  }

  ASSERT_TRUE(store_.Delete(intact).ok());
  test_support::ModelBackend backend;
  Indexer indexer(&backend);
  absl::StatusOr<ReplicaStart> start = LoadNewestSnapshot(
      store_, indexer.durable_state(), indexer.operator_view());
  ASSERT_FALSE(start.ok());
  EXPECT_EQ(start.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(start.status().message(), HasSubstr("\"forged\""));
  EXPECT_TRUE(Held(indexer).empty()) << "what the damaged one left is gone";
  store_.SetUnavailable(true);
  EXPECT_EQ(LoadNewestSnapshot(store_, indexer.durable_state(),
                               indexer.operator_view())
                .status()
                .code(),
            absl::StatusCode::kUnavailable);
}

// Forwards to a store, running `before_first_read` once, before the first
// ReadParts: what another process does while a replica reads.
class RacingStore final : public test_support::ForwardingSnapshotStore {
 public:
  RacingStore(fleet::SnapshotStore& store,
              std::function<void()> before_first_read)
      : ForwardingSnapshotStore(store),
        before_first_read_(std::move(before_first_read)) {}

  absl::StatusOr<std::vector<::kvindexer::fleet::v1::SnapshotManifest>> List()
      override {
    ++lists_;
    return store_.List();
  }
  absl::Status ReadParts(
      const ::kvindexer::fleet::v1::SnapshotManifest& manifest,
      absl::FunctionRef<absl::Status(std::string_view part)> on_part) override {
    if (before_first_read_) {
      std::function<void()> hook = std::move(before_first_read_);
      before_first_read_ = nullptr;
      hook();
    }
    return store_.ReadParts(manifest, on_part);
  }

  int lists() const { return lists_; }

 private:
  std::function<void()> before_first_read_;
  int lists_ = 0;
};

// Retention replaces the only snapshot while a replica starts to read it:
// the read finds it gone (NOT_FOUND), and the replica lists again and
// loads the snapshot that replaced it instead of giving up.
TEST_F(ReplicaSnapshotTest, ASnapshotThatVanishesMidReadIsReplaced) {
  Report("w1", {1});
  ::kvindexer::fleet::v1::SnapshotManifest first;
  ASSERT_NO_FATAL_FAILURE(WriteFirstSnapshot(&first));
  Report("w1", {2});
  RacingStore racing(store_, [&] {
    WriteSnapshot();
    ASSERT_TRUE(store_.Delete(first).ok());
  });
  test_support::ModelBackend backend;
  Indexer indexer(&backend);
  absl::StatusOr<ReplicaStart> start = LoadNewestSnapshot(
      racing, indexer.durable_state(), indexer.operator_view());
  ASSERT_TRUE(start.ok()) << start.status();
  ASSERT_TRUE(start->snapshot.has_value());
  EXPECT_NE(start->snapshot->id(), first.id());
  EXPECT_EQ(start->snapshot->position(), first.position() + 1);
  EXPECT_EQ(racing.lists(), 2);
  const std::set<std::pair<std::string, int64_t>> expected = {{"w1", 1},
                                                              {"w1", 2}};
  EXPECT_EQ(Held(indexer), expected);
}

}  // namespace replica_snapshot_test
}  // namespace kvindexer::replica
