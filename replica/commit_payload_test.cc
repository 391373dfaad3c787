// Staged commits too large for one log record (replica/commit_payload.h):
// the payload form stores the placements in the snapshot store and gives
// back exactly the inline record; a follower installs such a commit at its
// position, waits NOT_SERVING while its payload cannot be fetched, reloads a
// snapshot when the payload went with a trimmed record, and skips one whose
// payload does not match it.
#include "replica/commit_payload.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/indexer.h"
#include "core/stream_key.h"
#include "fleet/memory_event_log.h"
#include "fleet/memory_snapshot_store.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "replica/log_follower.h"
#include "tests/support/forwarding_snapshot_store.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"
#include "tests/support/server_process.h"

namespace kvindexer::replica {
// Named, not anonymous: the unity build joins test files.
namespace commit_payload_test {

using namespace std::chrono_literals;
using ::kvindexer::fleet::v1::LogRecord;
using test_support::ModelBackend;
using test_support::WaitUntil;
using ::testing::HasSubstr;
namespace v1 = ::kv_indexer::v1;

const StreamKey kStream{"ns", "w", 1};
constexpr uint32_t kPageSize = 16;

LogRecord ConfigureRecord() {
  LogRecord record;
  v1::ExpectedWorker* w = record.mutable_configure()->add_workers();
  SetStreamId(kStream, w->mutable_stream_id());
  w->set_worker_address("10.0.0.1:9000");
  w->set_page_size(kPageSize);
  record.set_producer("replica-a");
  return record;
}

// An inline commit of `hbm` placements at tier 1 and `dram` at tier 2.
LogRecord InlineCommit(int hbm, int dram) {
  LogRecord record;
  state::v1::StagedSnapshotCommit* commit = record.mutable_snapshot_commit();
  SetStreamId(kStream, commit->mutable_stream_id());
  commit->set_worker_address("10.0.0.2:9000");
  commit->set_worker_epoch("e1");
  commit->set_applied_seq(42);
  commit->mutable_metadata()->set_worker_generation("g1");
  commit->mutable_metadata()->set_page_size(kPageSize);
  commit->set_transaction_id("tx-1");
  int64_t next = 1;
  for (const auto& [tier, count] : {std::pair{1, hbm}, std::pair{2, dram}}) {
    if (count == 0) continue;
    v1::TierHashes* entry = commit->add_hashes_by_tier();
    entry->set_tier(static_cast<v1::TierType>(tier));
    for (int i = 0; i < count; ++i) {
      entry->add_hashes(next++ * 1000003);
      entry->add_component_masks(static_cast<uint32_t>(1 + i % 3));
      entry->add_block_sizes(kPageSize);
    }
  }
  record.set_producer("replica-a");
  return record;
}

std::vector<int64_t> HashesOf(const LogRecord& record) {
  std::vector<int64_t> out;
  for (const v1::TierHashes& t : record.snapshot_commit().hashes_by_tier()) {
    out.insert(out.end(), t.hashes().begin(), t.hashes().end());
  }
  return out;
}

size_t Held(Indexer& indexer, const std::vector<int64_t>& probe) {
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

TEST(CommitPayloadTest, StoredAndFetchedItIsTheInlineRecord) {
  // Small parts: the placements take several parts and chunks.
  fleet::MemorySnapshotStore store(/*max_part_bytes=*/1024);
  const LogRecord inline_record = InlineCommit(500, 300);
  absl::StatusOr<LogRecord> stored =
      StoreCommitPayload(store, "c-test-1", inline_record);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_TRUE(IsPayloadCommit(*stored));
  EXPECT_FALSE(IsPayloadCommit(inline_record));
  EXPECT_EQ(stored->payload_id(), "c-test-1");
  EXPECT_EQ(stored->payload_placements(), 800u);
  EXPECT_GT(stored->payload_parts(), 5u);
  EXPECT_EQ(stored->snapshot_commit().hashes_by_tier_size(), 0);
  EXPECT_LT(stored->ByteSizeLong(), 256u);
  EXPECT_EQ(stored->snapshot_commit().transaction_id(), "tx-1");

  absl::StatusOr<LogRecord> fetched = FetchCommitPayload(store, *stored);
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*fetched,
                                                                 inline_record))
      << fetched->ShortDebugString().substr(0, 400);
  // Storing the same id twice is refused; the first stays whole.
  EXPECT_EQ(
      StoreCommitPayload(store, "c-test-1", inline_record).status().code(),
      absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(FetchCommitPayload(store, *stored).ok());
}

TEST(CommitPayloadTest, APayloadThatDoesNotMatchItsRecordIsDataLoss) {
  fleet::MemorySnapshotStore store(1024);
  absl::StatusOr<LogRecord> stored =
      StoreCommitPayload(store, "c-test-2", InlineCommit(200, 0));
  ASSERT_TRUE(stored.ok()) << stored.status();
  LogRecord more_placements = *stored;
  more_placements.set_payload_placements(201);
  EXPECT_EQ(FetchCommitPayload(store, more_placements).status().code(),
            absl::StatusCode::kDataLoss);
  LogRecord more_parts = *stored;
  more_parts.set_payload_parts(stored->payload_parts() + 1);
  EXPECT_EQ(FetchCommitPayload(store, more_parts).status().code(),
            absl::StatusCode::kDataLoss);

  absl::StatusOr<std::unique_ptr<fleet::SnapshotStore::PayloadWriter>> writer =
      store.BeginPayload("c-garbage");
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->AddPart("\xff\xff\xff").ok());
  LogRecord garbage = *stored;
  garbage.set_payload_id("c-garbage");
  garbage.set_payload_parts(1);
  EXPECT_EQ(FetchCommitPayload(store, garbage).status().code(),
            absl::StatusCode::kDataLoss);

  LogRecord missing = *stored;
  missing.set_payload_id("c-never");
  EXPECT_EQ(FetchCommitPayload(store, missing).status().code(),
            absl::StatusCode::kNotFound);
  store.SetUnavailable(true);
  EXPECT_EQ(FetchCommitPayload(store, *stored).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(CommitPayloadTest, AFailedStoreLeavesNoPayload) {
  fleet::MemorySnapshotStore store(1024);
  store.SetUnavailable(true);
  EXPECT_EQ(StoreCommitPayload(store, "c-test-3", InlineCommit(100, 0))
                .status()
                .code(),
            absl::StatusCode::kUnavailable);
  store.SetUnavailable(false);
  EXPECT_TRUE(store.payload_ids().empty());
  // Parts too small for one placement.
  fleet::MemorySnapshotStore tiny(32);
  EXPECT_EQ(
      StoreCommitPayload(tiny, "c-test-4", InlineCommit(1, 0)).status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(CommitPayloadTest, PayloadIdsAreValidAndDistinct) {
  const std::string a = NewPayloadId("host/1:a b");
  const std::string b = NewPayloadId("host/1:a b");
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("c-host_1_a_b-", 0), 0u) << a;
  fleet::MemorySnapshotStore store;
  EXPECT_TRUE(store.BeginPayload(a).ok());
}

// A replica's follower over a log holding a configuration (1) and a commit
// in the payload form (2).
class PayloadFollowerTest : public ::testing::Test {
 protected:
  PayloadFollowerTest() {
    const std::string id = EncodeStreamKey(kStream);
    EXPECT_TRUE(log_.Append(fleet::kConfigureLogKey,
                            ConfigureRecord().SerializeAsString(), "",
                            std::nullopt)
                    .ok());
    absl::StatusOr<LogRecord> stored =
        StoreCommitPayload(store_, "c-payload", inline_);
    EXPECT_TRUE(stored.ok()) << stored.status();
    payload_record_ = stored.value_or(LogRecord{});
    EXPECT_TRUE(
        log_.Append(id, payload_record_.SerializeAsString(), "", std::nullopt)
            .ok());
  }

  LogFollowerOptions Options(fleet::SnapshotStore* payloads) {
    LogFollowerOptions options;
    options.read_wait = 20ms;
    options.retry_initial = 1ms;
    options.retry_cap = 10ms;
    options.payloads = payloads;
    return options;
  }

  const LogRecord inline_ = InlineCommit(300, 100);
  const std::vector<int64_t> hashes_ = HashesOf(inline_);
  fleet::MemoryEventLog log_;
  fleet::MemorySnapshotStore store_{1024};
  LogRecord payload_record_;
  ModelBackend backend_;
  Indexer indexer_{&backend_};
};

TEST_F(PayloadFollowerTest, TheCommitInstallsAtItsPosition) {
  LogFollower follower(log_, indexer_, Options(&store_));
  follower.Start();
  ASSERT_TRUE(WaitUntil([&] { return follower.caught_up(); }, 10s))
      << follower.NotReadyReason().value_or("");
  EXPECT_EQ(follower.applied_position(), 2u);
  EXPECT_EQ(follower.counts().applied, 2u);
  EXPECT_EQ(Held(indexer_, hashes_), hashes_.size());
  EXPECT_EQ(indexer_.operator_view()
                .WorkerState(EncodeStreamKey(kStream))
                ->checkpoint->seq,
            42u);
  follower.Stop();
}

TEST_F(PayloadFollowerTest, WhileThePayloadCannotBeFetchedItWaitsNotServing) {
  store_.SetUnavailable(true);
  LogFollower follower(log_, indexer_, Options(&store_));
  follower.Start();
  ASSERT_TRUE(
      WaitUntil([&] { return follower.counts().payload_failures >= 3; }, 10s));
  // Still at the record: nothing skipped, nothing installed.
  EXPECT_EQ(follower.applied_position(), 1u);
  EXPECT_FALSE(follower.caught_up());
  EXPECT_THAT(follower.NotReadyReason().value_or(""),
              HasSubstr("waiting for the payload of fleet event log record 2"));
  EXPECT_EQ(Held(indexer_, hashes_), 0u);

  store_.SetUnavailable(false);
  ASSERT_TRUE(WaitUntil([&] { return follower.caught_up(); }, 10s))
      << follower.NotReadyReason().value_or("");
  EXPECT_EQ(follower.applied_position(), 2u);
  EXPECT_EQ(Held(indexer_, hashes_), hashes_.size());
  EXPECT_EQ(follower.counts().undecodable, 0u);
  follower.Stop();
}

TEST_F(PayloadFollowerTest, APayloadMissingWhileItsRecordIsHeldIsWaitedFor) {
  ASSERT_TRUE(store_.DeletePayload("c-payload").ok());
  LogFollower follower(log_, indexer_, Options(&store_));
  follower.Start();
  ASSERT_TRUE(
      WaitUntil([&] { return follower.counts().payload_failures >= 2; }, 10s));
  EXPECT_EQ(follower.applied_position(), 1u);
  EXPECT_EQ(follower.counts().trimmed, 0u);
  // Stored again (by whoever has it): the follower gets there.
  ASSERT_TRUE(StoreCommitPayload(store_, "c-payload", inline_).ok());
  ASSERT_TRUE(WaitUntil([&] { return follower.caught_up(); }, 10s))
      << follower.NotReadyReason().value_or("");
  EXPECT_EQ(Held(indexer_, hashes_), hashes_.size());
  follower.Stop();
}

// Answers NOT_FOUND for every payload after trimming `log` past position
// `trim_to` - 1: what a replica sees when the snapshot holder trimmed the
// log and removed the payload between its read and its fetch.
class TrimmingStore final : public test_support::ForwardingSnapshotStore {
 public:
  TrimmingStore(fleet::SnapshotStore& inner, fleet::EventLog& log,
                uint64_t trim_to)
      : ForwardingSnapshotStore(inner), log_(log), trim_to_(trim_to) {}

  absl::Status ReadPayload(
      std::string_view id, uint64_t /*parts*/,
      absl::FunctionRef<absl::Status(std::string_view)> /*on_part*/) override {
    if (absl::Status s = log_.TrimBefore(trim_to_); !s.ok()) return s;
    return absl::NotFoundError(
        absl::StrCat("payload ", std::string(id), " is gone"));
  }

 private:
  fleet::EventLog& log_;
  const uint64_t trim_to_;
};

TEST_F(PayloadFollowerTest, APayloadGoneWithItsTrimmedRecordReloads) {
  // A record after the commit, so that the log is not empty once trimmed.
  LogRecord later = ConfigureRecord();
  ASSERT_TRUE(log_.Append(fleet::kConfigureLogKey, later.SerializeAsString(),
                          "", std::nullopt)
                  .ok());
  TrimmingStore trimming(store_, log_, /*trim_to=*/3);
  std::atomic<int> reloads{0};
  LogFollowerOptions options = Options(&trimming);
  // A snapshot at position 2 stands in for the newest one.
  options.reload = [&]() -> absl::StatusOr<std::optional<uint64_t>> {
    ++reloads;
    return std::optional<uint64_t>(2);
  };
  LogFollower follower(log_, indexer_, options);
  follower.Start();
  ASSERT_TRUE(WaitUntil([&] { return follower.caught_up(); }, 10s))
      << follower.NotReadyReason().value_or("");
  EXPECT_EQ(reloads.load(), 1);
  EXPECT_EQ(follower.counts().reloads, 1u);
  EXPECT_EQ(follower.counts().payload_failures, 0u);
  EXPECT_EQ(follower.applied_position(), 3u);
  follower.Stop();
}

TEST_F(PayloadFollowerTest, AMismatchedPayloadOrNoStoreSkipsTheRecord) {
  // The payload holds fewer placements than the record says: every replica
  // skips the record alike.
  ASSERT_TRUE(store_.DeletePayload("c-payload").ok());
  ASSERT_TRUE(
      StoreCommitPayload(store_, "c-payload", InlineCommit(10, 0)).ok());
  {
    LogFollower follower(log_, indexer_, Options(&store_));
    follower.Start();
    ASSERT_TRUE(WaitUntil([&] { return follower.caught_up(); }, 10s));
    EXPECT_EQ(follower.counts().undecodable, 1u);
    follower.Stop();
  }
  ModelBackend other_backend;
  Indexer other{&other_backend};
  LogFollower without_store(log_, other, Options(nullptr));
  without_store.Start();
  ASSERT_TRUE(WaitUntil([&] { return without_store.caught_up(); }, 10s));
  EXPECT_EQ(without_store.counts().undecodable, 1u);
  EXPECT_EQ(Held(other, hashes_), 0u);
  without_store.Stop();
}

}  // namespace commit_payload_test
}  // namespace kvindexer::replica
