#include "durable/wal_writer.h"

#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "durable/data_dir.h"
#include "durable/record_framing.h"
#include "durable/wal_failure_monitor.h"
#include "durable/wal_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_file_io.h"
#include "tests/support/test_files.h"
#include "tests/support/test_temp_dir.h"

namespace kvindexer::durable {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class WalWriterTest : public ::testing::Test {
 protected:
  std::string WalPath(uint64_t generation) const {
    return dir_.Sub(WalFileName(generation));
  }
  std::unique_ptr<WalWriter> OpenWriter(uint64_t generation, WalSync sync) {
    absl::StatusOr<std::unique_ptr<WalWriter>> writer =
        WalWriter::Open(dir_.path(), generation, sync, &io_);
    EXPECT_TRUE(writer.ok()) << writer.status();
    return writer.ok() ? *std::move(writer) : nullptr;
  }
  // The payloads in wal-<generation>.log; fails the test on a torn file.
  std::vector<std::string> Payloads(uint64_t generation) const {
    std::vector<std::string> payloads;
    const absl::StatusOr<WalScan> scan =
        ScanWal(WalPath(generation), generation, /*repair=*/false,
                [&](std::string_view payload) {
                  payloads.emplace_back(payload);
                  return absl::OkStatus();
                });
    EXPECT_TRUE(scan.ok()) << scan.status();
    if (scan.ok()) {
      EXPECT_FALSE(scan->torn);
    }
    return payloads;
  }

  TestTempDir dir_;
  TestFileIo io_;
};

TEST_F(WalWriterTest, CreatesTheFileWithItsHeaderAndSyncsIt) {
  auto writer = OpenWriter(5, WalSync::kAlways);
  ASSERT_NE(writer, nullptr);
  EXPECT_EQ(ReadTestFile(WalPath(5)), EncodeFileHeader(FileKind::kWal, 5));
  // The file's data and the directory entry.
  EXPECT_EQ(io_.fdatasyncs(), 1);
  EXPECT_EQ(io_.fsyncs(), 1);
  EXPECT_EQ(writer->generation(), 5u);
  EXPECT_EQ(writer->end(), 0u);
  EXPECT_EQ(writer->bytes_in_generation(), 0u);
}

TEST_F(WalWriterTest, AppendsFramedRecordsAtLogicalOffsets) {
  auto writer = OpenWriter(1, WalSync::kAlways);
  ASSERT_NE(writer, nullptr);
  EXPECT_EQ(*writer->Append("one"), 11u);
  EXPECT_EQ(*writer->Append("three"), 24u);
  EXPECT_EQ(writer->end(), 24u);
  EXPECT_EQ(writer->bytes_in_generation(), 24u);
  std::string expected = EncodeFileHeader(FileKind::kWal, 1);
  AppendRecord("one", &expected);
  AppendRecord("three", &expected);
  EXPECT_EQ(ReadTestFile(WalPath(1)), expected);
}

TEST_F(WalWriterTest, ContinuesAnExistingFileAtItsEnd) {
  {
    auto writer = OpenWriter(2, WalSync::kAlways);
    ASSERT_NE(writer, nullptr);
    ASSERT_TRUE(writer->Append("before").ok());
  }
  auto writer = OpenWriter(2, WalSync::kAlways);
  ASSERT_NE(writer, nullptr);
  // Offsets count from Open; the file's size from its start.
  EXPECT_EQ(writer->end(), 0u);
  EXPECT_EQ(writer->bytes_in_generation(), 14u);
  EXPECT_EQ(*writer->Append("after"), 13u);
  EXPECT_EQ(writer->bytes_in_generation(), 27u);
  EXPECT_THAT(Payloads(2), ElementsAre("before", "after"));
}

TEST_F(WalWriterTest, RefusesToContinueAForeignOrNewerFile) {
  WriteTestFile(WalPath(3), EncodeFileHeader(FileKind::kWal, 4));
  const absl::Status wrong_generation =
      WalWriter::Open(dir_.path(), 3, WalSync::kNone, &io_).status();
  EXPECT_EQ(wrong_generation.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(wrong_generation.message(), HasSubstr("generation 4"));

  std::string newer = EncodeFileHeader(FileKind::kWal, 3);
  // A newer version; the CRC no longer matters.
  newer[8] = static_cast<char>(kFormatVersion + 1);
  WriteTestFile(WalPath(3), newer);
  const absl::Status status =
      WalWriter::Open(dir_.path(), 3, WalSync::kNone, &io_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(),
              HasSubstr(absl::StrCat("format version ", kFormatVersion + 1)));
  EXPECT_EQ(ReadTestFile(WalPath(3)), newer);
}

TEST_F(WalWriterTest, RetriesInterruptedAndShortWrites) {
  auto writer = OpenWriter(1, WalSync::kNone);
  ASSERT_NE(writer, nullptr);
  io_.InterruptWrites(3);
  io_.LimitWrites(3);
  const std::string payload(100, 'p');
  ASSERT_TRUE(writer->Append(payload).ok());
  EXPECT_THAT(Payloads(1), ElementsAre(payload));
}

TEST_F(WalWriterTest, RejectsAnEmptyRecord) {
  auto writer = OpenWriter(1, WalSync::kNone);
  ASSERT_NE(writer, nullptr);
  EXPECT_EQ(writer->Append("").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(writer->end(), 0u);
}

TEST_F(WalWriterTest, FullDiskLeavesTheFileUnchangedAndTheNextAppendWorks) {
  auto writer = OpenWriter(1, WalSync::kAlways);
  ASSERT_NE(writer, nullptr);
  const uint64_t first = *writer->Append("first");
  const std::string before = ReadTestFile(WalPath(1));
  // Part of the record reaches the file before the disk is full.
  io_.FailWritesAfter(10, ENOSPC);
  const absl::StatusOr<uint64_t> failed = writer->Append(std::string(50, 'x'));
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(failed.status().message(),
            "state log write failed: No space left on device");
  EXPECT_EQ(ReadTestFile(WalPath(1)), before);
  EXPECT_EQ(writer->end(), first);
  EXPECT_TRUE(writer->WaitDurable(first).ok());

  io_.HealWrites();
  const absl::StatusOr<uint64_t> next = writer->Append("second");
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(*next, first + 14);
  EXPECT_TRUE(writer->WaitDurable(*next).ok());
  EXPECT_THAT(Payloads(1), ElementsAre("first", "second"));
}

TEST_F(WalWriterTest, AWriteThatCannotBeCutBackPoisonsTheWriter) {
  auto writer = OpenWriter(1, WalSync::kAlways);
  ASSERT_NE(writer, nullptr);
  io_.FailWritesAfter(4, EIO);
  io_.FailTruncates(EIO);
  const absl::Status failed = writer->Append("doomed").status();
  EXPECT_EQ(failed.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(failed.message(), HasSubstr("cutting the log back failed"));
  io_.HealWrites();
  io_.FailTruncates(0);
  EXPECT_EQ(writer->Append("later").status(), failed);
  // Nothing was appended, so offset 0 needs no sync.
  EXPECT_TRUE(writer->WaitDurable(0).ok());
}

// A record a sync already made durable stays acknowledged after a later
// sync fails.
TEST_F(WalWriterTest, ADurableRecordStaysAcknowledgedAfterALaterSyncFails) {
  auto writer = OpenWriter(1, WalSync::kAlways);
  ASSERT_NE(writer, nullptr);
  const uint64_t first = *writer->Append("first");
  ASSERT_TRUE(writer->WaitDurable(first).ok());
  const uint64_t second = *writer->Append("second");
  io_.FailSyncs(EIO);
  EXPECT_EQ(writer->WaitDurable(second).code(), absl::StatusCode::kUnavailable);
  io_.FailSyncs(0);
  EXPECT_TRUE(writer->WaitDurable(first).ok());
  EXPECT_EQ(writer->WaitDurable(second).code(), absl::StatusCode::kUnavailable);
}

TEST_F(WalWriterTest, AFailedSyncPoisonsTheWriter) {
  auto writer = OpenWriter(1, WalSync::kAlways);
  ASSERT_NE(writer, nullptr);
  const uint64_t end = *writer->Append("record");
  io_.FailSyncs(EIO);
  const absl::Status failed = writer->WaitDurable(end);
  EXPECT_EQ(failed.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(failed.message(),
            "state log write failed: fdatasync: Input/output error");
  io_.FailSyncs(0);
  // Linux may have dropped the dirty pages: nothing after this is trusted.
  EXPECT_EQ(writer->WaitDurable(end), failed);
  EXPECT_EQ(writer->Append("more").status(), failed);
  EXPECT_EQ(writer->Rotate(2), failed);
}

TEST_F(WalWriterTest, SyncNoneNeverSyncs) {
  auto writer = OpenWriter(1, WalSync::kNone);
  ASSERT_NE(writer, nullptr);
  const int at_open = io_.fdatasyncs();
  const uint64_t end = *writer->Append("record");
  EXPECT_TRUE(writer->WaitDurable(end).ok());
  EXPECT_EQ(io_.fdatasyncs(), at_open);
}

TEST_F(WalWriterTest, SyncAlwaysSyncsOncePerNewOffset) {
  auto writer = OpenWriter(1, WalSync::kAlways);
  ASSERT_NE(writer, nullptr);
  const int at_open = io_.fdatasyncs();
  const uint64_t first = *writer->Append("a");
  const uint64_t second = *writer->Append("b");
  EXPECT_TRUE(writer->WaitDurable(first).ok());
  EXPECT_EQ(io_.fdatasyncs(), at_open + 1);
  // That sync covered everything appended before it started.
  EXPECT_TRUE(writer->WaitDurable(second).ok());
  EXPECT_TRUE(writer->WaitDurable(first).ok());
  EXPECT_EQ(io_.fdatasyncs(), at_open + 1);
  const uint64_t third = *writer->Append("c");
  EXPECT_TRUE(writer->WaitDurable(third).ok());
  EXPECT_EQ(io_.fdatasyncs(), at_open + 2);
}

// One waiter's sync is held on the latch while more records are appended
// and more waiters arrive; when it is let through, a single further sync
// covers all of them.
TEST_F(WalWriterTest, GroupCommitSharesSyncsAmongWaiters) {
  auto writer = OpenWriter(1, WalSync::kAlways);
  ASSERT_NE(writer, nullptr);
  const int at_open = io_.fdatasyncs();
  io_.CloseSyncLatch();

  const uint64_t first = *writer->Append("first");
  std::thread leader([&] { EXPECT_TRUE(writer->WaitDurable(first).ok()); });
  io_.AwaitSyncsStarted(at_open + 1);

  constexpr int kFollowers = 8;
  std::vector<uint64_t> ends;
  for (int i = 0; i < kFollowers; ++i) {
    ends.push_back(*writer->Append("follower " + std::to_string(i)));
  }
  std::atomic<int> done{0};
  std::vector<std::thread> followers;
  for (int i = 0; i < kFollowers; ++i) {
    followers.emplace_back([&, end = ends[i]] {
      EXPECT_TRUE(writer->WaitDurable(end).ok());
      done.fetch_add(1);
    });
  }

  // Only the leader's sync is in flight: the others wait for it.
  EXPECT_EQ(io_.fdatasyncs(), at_open + 1);
  io_.AllowOneSync();
  leader.join();
  // The second sync starts (some follower leads it) but is held: nobody
  // can be done, since the first sync covered only the first record.
  io_.AwaitSyncsStarted(at_open + 2);
  EXPECT_EQ(done.load(), 0);
  // Opening the latch (rather than allowing one more sync) keeps a writer
  // that syncs per waiter from hanging here: it fails the count instead.
  io_.OpenSyncLatch();
  for (std::thread& follower : followers) follower.join();
  EXPECT_EQ(done.load(), kFollowers);
  EXPECT_EQ(io_.fdatasyncs(), at_open + 2)
      << "syncs for " << kFollowers + 1 << " waiters";
}

// With sync ahead, an append starts its own sync without anyone waiting;
// records appended while it runs share the next one, and a waiter finds
// its record durable (or in flight) instead of starting a sync of its own.
TEST_F(WalWriterTest, SyncAheadStartsASyncAtEachAppend) {
  absl::StatusOr<std::unique_ptr<WalWriter>> opened = WalWriter::Open(
      dir_.path(), 1, WalSync::kAlways, &io_, nullptr, /*sync_ahead=*/true);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<WalWriter> writer = *std::move(opened);
  const int at_open = io_.fdatasyncs();
  io_.CloseSyncLatch();
  const uint64_t first = *writer->Append("first");
  // Nobody waits, yet the sync starts (held by the latch).
  io_.AwaitSyncsStarted(at_open + 1);
  const uint64_t second = *writer->Append("second");
  const uint64_t third = *writer->Append("third");
  io_.AllowOneSync();
  // The first sync ends; the records appended during it go in one more.
  io_.AwaitSyncsStarted(at_open + 2);
  io_.OpenSyncLatch();
  EXPECT_TRUE(writer->WaitDurable(third).ok());
  EXPECT_TRUE(writer->WaitDurable(first).ok());
  EXPECT_TRUE(writer->WaitDurable(second).ok());
  EXPECT_EQ(io_.fdatasyncs(), at_open + 2);
  EXPECT_EQ(writer->syncs(), 2u);
  // A sync that fails poisons the writer for every caller, though the
  // sync-ahead thread ran it.
  io_.FailSyncs(EIO);
  const uint64_t fourth = *writer->Append("fourth");
  EXPECT_EQ(writer->WaitDurable(fourth).code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(writer->Append("fifth").ok());
}

// Without sync ahead (the other tests), nothing syncs until someone waits.
TEST_F(WalWriterTest, WithoutSyncAheadAppendsDoNotSync) {
  auto writer = OpenWriter(1, WalSync::kAlways);
  ASSERT_NE(writer, nullptr);
  const int at_open = io_.fdatasyncs();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(writer->Append("record").ok());
  EXPECT_EQ(io_.fdatasyncs(), at_open);
}

TEST_F(WalWriterTest, RetractTakesBackTheLastRecord) {
  auto writer = OpenWriter(1, WalSync::kAlways);
  ASSERT_NE(writer, nullptr);
  const uint64_t kept = *writer->Append("kept");
  const std::string before = ReadTestFile(WalPath(1));
  const uint64_t refused = *writer->Append("refused by the backend");
  writer->Retract(refused);
  EXPECT_EQ(writer->end(), kept);
  EXPECT_EQ(ReadTestFile(WalPath(1)), before);
  EXPECT_EQ(*writer->Append("next"), kept + 12);
  EXPECT_THAT(Payloads(1), ElementsAre("kept", "next"));
}

// A sync in flight when a record is retracted may have covered it; the
// durable offset must drop back with the end, or a shorter record appended
// in its place would count as durable without a sync.
TEST_F(WalWriterTest, RetractWaitsForASyncInFlightAndClampsDurability) {
  auto writer = OpenWriter(1, WalSync::kAlways);
  ASSERT_NE(writer, nullptr);
  const int at_open = io_.fdatasyncs();
  const uint64_t kept = *writer->Append("kept");
  const uint64_t refused = *writer->Append(std::string(200, 'r'));
  io_.CloseSyncLatch();
  std::thread waiter([&] { EXPECT_TRUE(writer->WaitDurable(refused).ok()); });
  io_.AwaitSyncsStarted(at_open + 1);
  std::thread retract([&] { writer->Retract(refused); });
  io_.OpenSyncLatch();
  waiter.join();
  retract.join();
  EXPECT_EQ(writer->end(), kept);

  // The sync covered the retracted record, so the retraction syncs too: a
  // host crash must not bring the record back.
  EXPECT_EQ(io_.fdatasyncs(), at_open + 2);
  const uint64_t replacement = *writer->Append("short");
  ASSERT_LT(replacement, refused);
  EXPECT_TRUE(writer->WaitDurable(replacement).ok());
  EXPECT_EQ(io_.fdatasyncs(), at_open + 3);
  EXPECT_THAT(Payloads(1), ElementsAre("kept", "short"));
}

TEST_F(WalWriterTest, RotateSyncsTheOldFileAndContinuesTheOffsets) {
  auto writer = OpenWriter(1, WalSync::kAlways);
  ASSERT_NE(writer, nullptr);
  const uint64_t old_end = *writer->Append("in one");
  const int before_rotate = io_.fdatasyncs();
  ASSERT_TRUE(writer->Rotate(2).ok());
  // The old file's sync, then the new file's.
  EXPECT_EQ(io_.fdatasyncs(), before_rotate + 2);
  EXPECT_EQ(writer->generation(), 2u);
  EXPECT_EQ(writer->bytes_in_generation(), 0u);
  EXPECT_EQ(ReadTestFile(WalPath(2)), EncodeFileHeader(FileKind::kWal, 2));
  // Already durable: no further sync.
  EXPECT_TRUE(writer->WaitDurable(old_end).ok());
  EXPECT_EQ(io_.fdatasyncs(), before_rotate + 2);

  const uint64_t new_end = *writer->Append("in two");
  EXPECT_EQ(new_end, old_end + 14);
  EXPECT_EQ(writer->bytes_in_generation(), 14u);
  EXPECT_TRUE(writer->WaitDurable(new_end).ok());
  EXPECT_EQ(io_.fdatasyncs(), before_rotate + 3);
  EXPECT_THAT(Payloads(1), ElementsAre("in one"));
  EXPECT_THAT(Payloads(2), ElementsAre("in two"));

  EXPECT_EQ(writer->Rotate(2).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(WalWriterTest, AFailedRotationKeepsWritingTheOldFile) {
  auto writer = OpenWriter(1, WalSync::kNone);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->Append("a").ok());
  // wal-2.log cannot be created: a directory is in its place.
  ASSERT_EQ(::mkdir(WalPath(2).c_str(), 0700), 0);
  EXPECT_FALSE(writer->Rotate(2).ok());
  EXPECT_EQ(writer->generation(), 1u);
  ASSERT_TRUE(writer->Append("b").ok());
  EXPECT_THAT(Payloads(1), ElementsAre("a", "b"));
}

// A writer that reports to a monitor of the test's, which logs nothing.
class MonitoredWalWriterTest : public WalWriterTest {
 protected:
  std::unique_ptr<WalWriter> OpenMonitored(uint64_t generation) {
    absl::StatusOr<std::unique_ptr<WalWriter>> writer = WalWriter::Open(
        dir_.path(), generation, WalSync::kAlways, &io_, &monitor_);
    EXPECT_TRUE(writer.ok()) << writer.status();
    return writer.ok() ? *std::move(writer) : nullptr;
  }
  std::string MarkerPath(uint64_t generation) const {
    return dir_.Sub(PoisonMarkerFileName(generation));
  }
  WalFailureMonitor monitor_{
      nullptr, [](spdlog::level::level_enum, std::string_view) {}};
};

TEST_F(MonitoredWalWriterTest, RefusedAppendsAreCountedByReason) {
  auto writer = OpenMonitored(1);
  ASSERT_NE(writer, nullptr);
  for (const int err : {ENOSPC, EDQUOT, EFBIG, EIO}) {
    io_.FailWritesAfter(0, err);
    EXPECT_EQ(writer->Append("refused").status().code(),
              absl::StatusCode::kUnavailable);
  }
  io_.HealWrites();
  EXPECT_EQ(writer->Append("").status().code(),
            absl::StatusCode::kInvalidArgument);
  const WalRefusalCounts counts = monitor_.counts();
  EXPECT_EQ(counts.of(WalRefusal::kNoSpace), 2u);
  EXPECT_EQ(counts.of(WalRefusal::kFileTooLarge), 1u);
  EXPECT_EQ(counts.of(WalRefusal::kIoError), 1u);
  EXPECT_EQ(counts.of(WalRefusal::kInvalidRecord), 1u);
  EXPECT_EQ(counts.of(WalRefusal::kPoisoned), 0u);
  // A refused write is not a failed log: the next one goes through.
  EXPECT_FALSE(monitor_.poisoned());
  EXPECT_FALSE(TestFileExists(MarkerPath(1)));
  const absl::StatusOr<uint64_t> end = writer->Append("accepted");
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_TRUE(writer->WaitDurable(*end).ok());
}

// The poisoning reaches the monitor once, with the file it happened in,
// and leaves the marker that keeps the next start from continuing it.
TEST_F(MonitoredWalWriterTest, AFailedSyncLeavesAMarkerAndTellsTheMonitor) {
  auto writer = OpenMonitored(3);
  ASSERT_NE(writer, nullptr);
  std::vector<std::string> calls;
  monitor_.SetOnFailure(
      [&calls](const std::string& failure) { calls.push_back(failure); });
  const uint64_t end = *writer->Append("record");
  io_.FailSyncs(EIO);
  EXPECT_EQ(writer->WaitDurable(end).code(), absl::StatusCode::kUnavailable);
  io_.FailSyncs(0);
  const std::string failure =
      "fdatasync: Input/output error (" + WalPath(3) + ")";
  EXPECT_THAT(calls, ElementsAre(failure));
  EXPECT_EQ(monitor_.Failure(), failure);
  EXPECT_TRUE(monitor_.poisoned());
  EXPECT_EQ(ReadTestFile(MarkerPath(3)), "fdatasync: Input/output error\n");
  EXPECT_EQ(writer->poison().code(), absl::StatusCode::kUnavailable);

  // Every later append is refused, counted as such, and reported no more.
  EXPECT_FALSE(writer->Append("more").ok());
  EXPECT_FALSE(writer->Append("more").ok());
  EXPECT_EQ(monitor_.counts().of(WalRefusal::kPoisoned), 2u);
  EXPECT_EQ(writer->WaitDurable(end).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(calls.size(), 1u);
  // The record stays in the file: the failed sync does not say it is lost.
  EXPECT_THAT(Payloads(3), ElementsAre("record"));
}

// A rotation whose sync of the old file fails marks the old file, the one
// whose writeback failed, and creates no new one.
TEST_F(MonitoredWalWriterTest, AFailedRotationSyncMarksTheOldFile) {
  auto writer = OpenMonitored(1);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->Append("a").ok());
  io_.FailSyncs(EIO);
  EXPECT_EQ(writer->Rotate(2).code(), absl::StatusCode::kUnavailable);
  io_.FailSyncs(0);
  EXPECT_TRUE(TestFileExists(MarkerPath(1)));
  EXPECT_FALSE(TestFileExists(MarkerPath(2)));
  EXPECT_FALSE(TestFileExists(WalPath(2)));
  EXPECT_THAT(monitor_.Failure().value_or(""), HasSubstr(WalPath(1)));
}

// Without the poisoning no marker is ever left, and a good writer reports
// OK as its poison.
TEST_F(MonitoredWalWriterTest, AHealthyWriterLeavesNoMarker) {
  auto writer = OpenMonitored(1);
  ASSERT_NE(writer, nullptr);
  const uint64_t end = *writer->Append("a");
  EXPECT_TRUE(writer->WaitDurable(end).ok());
  EXPECT_TRUE(writer->poison().ok());
  EXPECT_FALSE(TestFileExists(MarkerPath(1)));
  EXPECT_EQ(monitor_.Failure(), std::nullopt);
}

}  // namespace
}  // namespace kvindexer::durable
