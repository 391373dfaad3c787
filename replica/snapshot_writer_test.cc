// WriteSnapshotRound (replica/snapshot_writer.h): rounds build on the newest
// snapshot, keep the newest few, trim the log behind them, refuse to build
// over trimmed records, pass over a damaged newest snapshot, and leave
// nothing visible when they fail; the holder removes the payloads of large
// staged commits that no kept record names.
#include "replica/snapshot_writer.h"

#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/stream_key.h"
#include "durable/record_framing.h"
#include "fleet/memory_event_log.h"
#include "fleet/memory_snapshot_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "replica/commit_payload.h"
#include "replica/snapshot_image.h"
#include "replica/snapshot_reader.h"
#include "tests/support/forged_snapshot.h"
#include "tests/support/forwarding_snapshot_store.h"
#include "tests/support/requests.h"

namespace kvindexer::replica {
namespace snapshot_writer_test {

using ::kvindexer::fleet::v1::LogRecord;
using ::kvindexer::fleet::v1::SnapshotManifest;
using test_support::Batch;
using test_support::Range;
using ::testing::HasSubstr;

class SnapshotWriterTest : public ::testing::Test {
 protected:
  SnapshotWriterTest() {
    options_.writer = "replica-a";
    options_.keep = 2;
    options_.now_unix_ms = 1700000000000;
  }

  // A seed-era apply of `hashes` for `worker`.
  void AppendReport(const std::string& worker, std::vector<int64_t> hashes) {
    LogRecord record;
    *record.mutable_apply() =
        Batch(worker, "10.0.0.1:80").Report(kTierHbm, hashes);
    record.set_producer("bridge");
    ASSERT_TRUE(
        log_.Append(worker, record.SerializeAsString(), "", std::nullopt).ok());
  }

  absl::StatusOr<SnapshotRound> Round() {
    return WriteSnapshotRound(log_, store_, options_, stop_);
  }

  std::vector<uint64_t> Positions() {
    std::vector<uint64_t> out;
    absl::StatusOr<std::vector<SnapshotManifest>> all = store_.List();
    EXPECT_TRUE(all.ok()) << all.status();
    for (const SnapshotManifest& m : *all) out.push_back(m.position());
    return out;
  }

  // Placements in the newest snapshot.
  uint64_t NewestPlacements() {
    absl::StatusOr<std::optional<SnapshotManifest>> newest =
        NewestSnapshot(store_);
    EXPECT_TRUE(newest.ok() && newest->has_value());
    uint64_t n = 0;
    EXPECT_TRUE(ReadSnapshotChunks(store_, **newest,
                                   [&](const state::v1::CheckpointChunk& c) {
                                     n += c.placements().hashes_size();
                                     return absl::OkStatus();
                                   })
                    .ok());
    return n;
  }

  fleet::MemoryEventLog log_;
  fleet::MemorySnapshotStore store_{256 * 1024};
  SnapshotRoundOptions options_;
  std::atomic<bool> stop_{false};
};

TEST_F(SnapshotWriterTest, AnEmptyLogWritesNothing) {
  absl::StatusOr<SnapshotRound> round = Round();
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_FALSE(round->written);
  EXPECT_TRUE(Positions().empty());
}

TEST_F(SnapshotWriterTest, RoundsBuildOnTheNewestAndKeepTwo) {
  AppendReport("w1", {1, 2});
  AppendReport("w2", {3});
  absl::StatusOr<SnapshotRound> round = Round();
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_TRUE(round->written);
  EXPECT_EQ(round->records_applied, 2u);
  EXPECT_EQ(round->manifest.position(), 2u);
  EXPECT_EQ(round->manifest.writer(), "replica-a");
  EXPECT_EQ(round->manifest.created_unix_ms(), 1700000000000);
  EXPECT_EQ(NewestPlacements(), 3u);
  // One snapshot of the two to keep: the log is not trimmed yet, so that a
  // replica reading behind the snapshot still finds every record.
  EXPECT_EQ(log_.Bounds()->first, 1u);

  // Nothing new: no snapshot.
  round = Round();
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_FALSE(round->written);

  AppendReport("w1", {4});
  round = Round();
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_EQ(round->records_applied, 1u);  // only what follows the newest
  EXPECT_EQ(NewestPlacements(), 4u);
  EXPECT_EQ(Positions(), (std::vector<uint64_t>{2, 3}));
  // The log is kept back to the oldest snapshot kept.
  EXPECT_EQ(log_.Bounds()->first, 3u);

  AppendReport("w3", {5});
  round = Round();
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_EQ(round->snapshots_deleted, 1u);
  EXPECT_EQ(Positions(), (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(round->trimmed_before, 4u);
  EXPECT_EQ(NewestPlacements(), 5u);
}

TEST_F(SnapshotWriterTest, ABigImageIsSplitIntoParts) {
  // One apply carries at most 16,384 hashes (docs/contract.md, "Limits").
  AppendReport("w1", Range(1, 10000));
  AppendReport("w1", Range(10001, 10000));
  AppendReport("w2", Range(1, 10000));
  AppendReport("w2", Range(10001, 10000));
  absl::StatusOr<SnapshotRound> round = Round();
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_GT(round->manifest.parts(), 1u);
  EXPECT_EQ(NewestPlacements(), 40000u);
}

TEST_F(SnapshotWriterTest, RecordsTrimmedPastTheNewestSnapshotAreDataLoss) {
  AppendReport("w1", {1});
  AppendReport("w1", {2});
  ASSERT_TRUE(log_.TrimBefore(2).ok());
  absl::StatusOr<SnapshotRound> round = Round();
  EXPECT_EQ(round.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(round.status().message(), HasSubstr("trimmed"));
  EXPECT_TRUE(Positions().empty());
}

// A newest snapshot that does not add up is deleted, and the round builds
// on the one before it.
TEST_F(SnapshotWriterTest, ADamagedNewestIsDeletedAndTheOneBeforeItUsed) {
  AppendReport("w1", {1});
  ASSERT_TRUE(Round().ok());
  AppendReport("w1", {2});
  ASSERT_TRUE(Round().ok());
  AppendReport("w1", {3});
  absl::StatusOr<std::vector<SnapshotManifest>> all = store_.List();
  ASSERT_TRUE(all.ok() && all->size() == 2);
  // A manifest at position 3 that claims more chunks than its parts hold.
  SnapshotManifest forged = all->back();
  forged.set_id("forged");
  forged.set_position(3);
  forged.set_chunks(forged.chunks() + 5);
  ASSERT_TRUE(
      test_support::CommitForgedSnapshot(store_, all->back(), forged).ok());
  AppendReport("w1", {4});
  absl::StatusOr<SnapshotRound> round = Round();
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_TRUE(round->written);
  EXPECT_EQ(round->manifest.position(), 4u);
  EXPECT_EQ(Positions(), (std::vector<uint64_t>{2, 4}));
  EXPECT_EQ(NewestPlacements(), 4u);
  absl::StatusOr<std::vector<SnapshotManifest>> left = store_.List();
  ASSERT_TRUE(left.ok()) << left.status();
  for (const SnapshotManifest& m : *left) EXPECT_NE(m.id(), "forged");
}

// A newest snapshot in a newer checkpoint format is neither built on nor
// deleted: the round fails saying so, and the store keeps what it had.
TEST_F(SnapshotWriterTest, ANewerFormatNewestStopsTheRound) {
  AppendReport("w1", {1});
  ASSERT_TRUE(Round().ok());
  absl::StatusOr<std::vector<SnapshotManifest>> all = store_.List();
  ASSERT_TRUE(all.ok() && all->size() == 1);
  EXPECT_EQ(all->back().format_version(), durable::kFormatVersion);
  SnapshotManifest newer = all->back();
  newer.set_id("newer");
  newer.set_position(2);
  newer.set_format_version(durable::kFormatVersion + 1);
  AppendReport("w1", {2});
  ASSERT_TRUE(
      test_support::CommitForgedSnapshot(store_, all->back(), newer).ok());
  AppendReport("w1", {3});
  absl::StatusOr<SnapshotRound> round = Round();
  EXPECT_EQ(round.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Positions(), (std::vector<uint64_t>{1, 2}));
}

// Parts a writer that died half way left go once a kept snapshot was
// committed after them.
TEST_F(SnapshotWriterTest, ARoundRemovesPartsAbandonedBeforeTheOldestKept) {
  store_.AddAbandonedParts("crashed", {"x", "y"});
  AppendReport("w1", {1});
  absl::StatusOr<SnapshotRound> round = Round();
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_EQ(round->abandoned_removed, 1u);
  EXPECT_EQ(store_.part_count(), 1u);  // the new snapshot's own
  AppendReport("w1", {2});
  round = Round();
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_EQ(round->abandoned_removed, 0u);
}

const StreamKey kStream{"ns", "w", 1};

LogRecord ConfigureRecord() {
  LogRecord record;
  ::kv_indexer::v1::ExpectedWorker* w =
      record.mutable_configure()->add_workers();
  SetStreamId(kStream, w->mutable_stream_id());
  w->set_worker_address("10.0.0.1:9000");
  w->set_page_size(16);
  record.set_producer("replica-a");
  return record;
}

// A staged commit of `count` HBM placements of the stream.
LogRecord CommitRecord(int count) {
  LogRecord record;
  state::v1::StagedSnapshotCommit* commit = record.mutable_snapshot_commit();
  SetStreamId(kStream, commit->mutable_stream_id());
  commit->set_worker_address("10.0.0.2:9000");
  commit->set_worker_epoch("e1");
  commit->set_applied_seq(42);
  commit->mutable_metadata()->set_page_size(16);
  ::kv_indexer::v1::TierHashes* tier = commit->add_hashes_by_tier();
  tier->set_tier(::kv_indexer::v1::TierType(kTierHbm));
  for (int i = 1; i <= count; ++i) tier->add_hashes(i * 7919);
  record.set_producer("replica-a");
  return record;
}

// Runs `before_listing` once, when payloads are next listed for removal:
// a writer appending meanwhile.
class HookedStore final : public test_support::ForwardingSnapshotStore {
 public:
  using ForwardingSnapshotStore::ForwardingSnapshotStore;
  std::function<void()> before_listing;

  absl::StatusOr<std::vector<std::string>> PayloadsStoredBefore(
      const SnapshotManifest& snapshot) override {
    if (before_listing) {
      std::function<void()> hook = std::move(before_listing);
      before_listing = nullptr;
      hook();
    }
    return store_.PayloadsStoredBefore(snapshot);
  }
};

// The lease holder removes payloads named only by records at or below the
// oldest kept snapshot, and unnamed ones stored before it; it keeps those
// named after it (by a newer snapshot's records or by the log's tail) and
// those stored after it.
TEST_F(SnapshotWriterTest, RoundsRemoveThePayloadsNoKeptRecordNames) {
  HookedStore store(store_);
  const std::string stream = EncodeStreamKey(kStream);
  auto store_payload = [&](const std::string& id,
                           int count) -> absl::StatusOr<LogRecord> {
    return StoreCommitPayload(store, id, CommitRecord(count));
  };
  auto append = [&](const LogRecord& record) {
    const std::string& worker =
        record.has_configure() ? std::string(fleet::kConfigureLogKey) : stream;
    ASSERT_TRUE(
        log_.Append(worker, record.SerializeAsString(), "", std::nullopt).ok());
  };
  ASSERT_NO_FATAL_FAILURE(append(ConfigureRecord()));  // 1
  absl::StatusOr<LogRecord> early = store_payload("c-early", 50);
  ASSERT_TRUE(early.ok()) << early.status();
  ASSERT_NO_FATAL_FAILURE(append(*early));  // 2
  ASSERT_TRUE(store_payload("c-orphan", 5).ok());
  absl::StatusOr<LogRecord> late = store_payload("c-late", 30);
  ASSERT_TRUE(late.ok()) << late.status();

  absl::StatusOr<SnapshotRound> round =
      WriteSnapshotRound(log_, store, options_, stop_);
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_EQ(round->manifest.position(), 2u);
  EXPECT_THAT(round->manifest.payload_ids(), ::testing::ElementsAre("c-early"));
  EXPECT_EQ(NewestPlacements(), 50u);  // the payload's placements
  EXPECT_EQ(round->payloads_removed, 0u);

  absl::StatusOr<LogRecord> after = store_payload("c-after", 20);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_NO_FATAL_FAILURE(append(*late));  // 3
  round = WriteSnapshotRound(log_, store, options_, stop_);
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_EQ(round->manifest.position(), 3u);
  EXPECT_THAT(round->manifest.payload_ids(), ::testing::ElementsAre("c-late"));
  EXPECT_EQ(NewestPlacements(), 30u);
  EXPECT_EQ(round->trimmed_before, 3u);
  // c-early's record went with the trim; c-orphan has none.
  EXPECT_EQ(round->payloads_removed, 2u);
  EXPECT_THAT(store_.payload_ids(),
              ::testing::ElementsAre("c-after", "c-late"));

  // The next round measures against the snapshot at 3: c-late's record is
  // trimmed, c-after's is appended while the round runs.
  AppendReport("w1", {1});                         // 4
  store.before_listing = [&] { append(*after); };  // 5
  round = WriteSnapshotRound(log_, store, options_, stop_);
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_EQ(round->manifest.position(), 4u);
  EXPECT_EQ(round->trimmed_before, 4u);
  EXPECT_EQ(round->payloads_removed, 1u);
  EXPECT_THAT(store_.payload_ids(), ::testing::ElementsAre("c-after"));
}

// Without a trim the records that name payloads may still be read: none is
// removed.
TEST_F(SnapshotWriterTest, PayloadsStayWhileTheLogIsNotTrimmed) {
  options_.trim_log = false;
  ASSERT_TRUE(StoreCommitPayload(store_, "c-orphan", CommitRecord(5)).ok());
  for (int64_t h = 1; h <= 3; ++h) {
    AppendReport("w1", {h});
    absl::StatusOr<SnapshotRound> round = Round();
    ASSERT_TRUE(round.ok()) << round.status();
    EXPECT_EQ(round->payloads_removed, 0u);
  }
  EXPECT_THAT(store_.payload_ids(), ::testing::ElementsAre("c-orphan"));
}

TEST_F(SnapshotWriterTest, AnUnavailableStoreLeavesEarlierSnapshots) {
  AppendReport("w1", {1});
  ASSERT_TRUE(Round().ok());
  AppendReport("w1", {2});
  store_.SetUnavailable(true);
  EXPECT_EQ(Round().status().code(), absl::StatusCode::kUnavailable);
  store_.SetUnavailable(false);
  EXPECT_EQ(Positions(), (std::vector<uint64_t>{1}));
  ASSERT_TRUE(Round().ok());
  EXPECT_EQ(Positions(), (std::vector<uint64_t>{1, 2}));
}

TEST_F(SnapshotWriterTest, AStoppedRoundLeavesNoParts) {
  AppendReport("w1", {1});
  stop_ = true;
  EXPECT_EQ(Round().status().code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(Positions().empty());
  EXPECT_EQ(store_.part_count(), 0u);
}

TEST(SnapshotImageTest, RecordsAtOrBelowItsPositionAreSkipped) {
  SnapshotImage image{RequestLimits{}};
  image.SetPosition(5);
  LogRecord record;
  *record.mutable_apply() = Batch("w1", "a:1").Report(kTierHbm, {1});
  EXPECT_FALSE(image.Apply({5, "w1", record.SerializeAsString()}).has_value());
  EXPECT_TRUE(image.Apply({6, "w1", record.SerializeAsString()}).has_value());
  EXPECT_EQ(image.position(), 6u);
}

TEST(MemorySnapshotStoreTest, OnlyCommittedSnapshotsExist) {
  fleet::MemorySnapshotStore store(1024);
  absl::StatusOr<std::unique_ptr<fleet::SnapshotStore::Writer>> writer =
      store.Begin("s1");
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->AddPart("abc").ok());
  EXPECT_EQ((*writer)->AddPart(std::string(2000, 'x')).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(store.List()->empty());
  EXPECT_EQ(store.Begin("s1").status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(store.Begin("bad id").status().code(),
            absl::StatusCode::kInvalidArgument);
  SnapshotManifest manifest;
  manifest.set_id("s1");
  manifest.set_parts(2);
  EXPECT_EQ((*writer)->Commit(manifest).code(),
            absl::StatusCode::kInvalidArgument);
  manifest.set_parts(1);
  ASSERT_TRUE((*writer)->Commit(manifest).ok());
  ASSERT_EQ(store.List()->size(), 1u);
  std::string read;
  ASSERT_TRUE(store
                  .ReadParts(manifest,
                             [&](std::string_view part) {
                               read += part;
                               return absl::OkStatus();
                             })
                  .ok());
  EXPECT_EQ(read, "abc");
  ASSERT_TRUE(store.Delete(manifest).ok());
  EXPECT_EQ(store
                .ReadParts(manifest,
                           [](std::string_view) { return absl::OkStatus(); })
                .code(),
            absl::StatusCode::kNotFound);
  // An abandoned writer's parts go with it.
  {
    absl::StatusOr<std::unique_ptr<fleet::SnapshotStore::Writer>> abandoned =
        store.Begin("s2");
    ASSERT_TRUE(abandoned.ok());
    ASSERT_TRUE((*abandoned)->AddPart("x").ok());
  }
  EXPECT_EQ(store.part_count(), 0u);
}

}  // namespace snapshot_writer_test
}  // namespace kvindexer::replica
