// DurableStore against damage that is not a crash's (docs/durability.md,
// "Recovery"; docs/security.md, "The data directory"): a bad record in the
// middle of a log, whose cut bytes are kept and whose loss is an ERROR and
// a figure of the store; a torn tail, which stays a WARN with nothing kept;
// and state files that are symbolic links, which stop the store.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "durable/data_dir.h"
#include "durable/durable_store.h"
#include "durable/record_framing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/durable_store_fixture.h"
#include "tests/support/test_files.h"

namespace kvindexer::durable {
namespace durable_store_damage_test {

using ::testing::HasSubstr;

// Where each record of the log file `path` starts.
std::vector<uint64_t> RecordStarts(const std::string& path) {
  const std::string bytes = ReadTestFile(path);
  std::vector<uint64_t> starts;
  size_t at = kFileHeaderBytes;
  while (true) {
    const RecordRead read = ReadRecord(std::string_view(bytes).substr(at));
    if (read.outcome != RecordRead::Outcome::kOk) break;
    starts.push_back(at);
    at += read.size;
  }
  return starts;
}

class DurableStoreDamageTest : public DurableStoreTest {
 protected:
  // Workload, then gated applies of w1 with seqs 13..20 (one record each),
  // then a crash.
  void WriteLogAndCrash() {
    StartOk(Options());
    Workload();
    ApplyW1Batches(13, 8);
    Crash();
  }
  std::vector<std::string> KeptCopies() const {
    std::vector<std::string> out;
    for (const std::string& name : Files()) {
      if (name.find(".corrupt-") != std::string::npos) out.push_back(name);
    }
    return out;
  }
};

TEST_F(DurableStoreDamageTest, ABadRecordInTheMiddleIsKeptCountedAndAnError) {
  WriteLogAndCrash();
  const std::string wal = Path(WalFileName(1));
  const std::vector<uint64_t> starts = RecordStarts(wal);
  ASSERT_GE(starts.size(), 8u);
  // The record of seq 17: 13..16 stay, 18..20 are intact but lost.
  const uint64_t bad = starts[starts.size() - 4];
  const uint64_t size = std::filesystem::file_size(wal);
  const std::string original = ReadTestFile(wal);
  FlipByte(wal, bad + kRecordHeaderBytes + 2);

  TestLogCapture log;
  StartOk(Options());
  const RecoveryReport& report = store().recovery();
  EXPECT_TRUE(report.torn_tail);
  EXPECT_TRUE(report.log_damaged);
  EXPECT_EQ(report.cut_records, 3u);
  EXPECT_EQ(report.cut_bytes, size - bad);
  EXPECT_EQ(Probe("w1", "e1"), 16u);
  EXPECT_EQ(std::filesystem::file_size(wal), bad);

  // The bytes cut are kept, as they were on disk.
  const std::string copy = WalFileName(1) + ".corrupt-" + std::to_string(bad);
  EXPECT_THAT(KeptCopies(), ::testing::ElementsAre(copy));
  std::string damaged = original;
  damaged[bad + kRecordHeaderBytes + 2] ^= 0x10;
  EXPECT_EQ(ReadTestFile(Path(copy)), damaged.substr(bad));
  EXPECT_TRUE(Logged(log, spdlog::level::err,
                     absl::StrCat("wal: damaged record in the middle of the "
                                  "log file=",
                                  wal, " offset=", bad)));
  EXPECT_TRUE(Logged(log, spdlog::level::err, "intact_records_after=3"));
  EXPECT_FALSE(Logged(log, spdlog::level::warn, "truncated corrupt tail"));

  // And the metrics' figures say so for as long as this process runs.
  const DurableFigures figures = store().figures();
  EXPECT_TRUE(figures.recovery_log_damaged);
  EXPECT_EQ(figures.recovery_cut_records, 3u);
  EXPECT_EQ(figures.recovery_cut_bytes, size - bad);

  // The next start finds a clean log and keeps nothing more.
  Crash();
  StartOk(Options());
  EXPECT_FALSE(store().recovery().log_damaged);
  EXPECT_EQ(store().recovery().cut_bytes, 0u);
  EXPECT_EQ(Probe("w1", "e1"), 16u);
  EXPECT_EQ(KeptCopies().size(), 1u);
}

// The normal crash: the end of the last record. A WARN, counted bytes, no
// copy and no damage.
TEST_F(DurableStoreDamageTest, ATornTailStaysAWarningAndKeepsNothing) {
  WriteLogAndCrash();
  const std::string wal = Path(WalFileName(1));
  const uint64_t last = RecordStarts(wal).back();
  const uint64_t size = std::filesystem::file_size(wal);
  std::filesystem::resize_file(wal, size - 3);

  TestLogCapture log;
  StartOk(Options());
  EXPECT_TRUE(store().recovery().torn_tail);
  EXPECT_FALSE(store().recovery().log_damaged);
  EXPECT_EQ(store().recovery().cut_records, 0u);
  EXPECT_EQ(store().recovery().cut_bytes, size - 3 - last);
  EXPECT_THAT(KeptCopies(), ::testing::IsEmpty());
  EXPECT_TRUE(Logged(log, spdlog::level::warn, "truncated corrupt tail"));
  EXPECT_THAT(log.Lines(spdlog::level::err), ::testing::IsEmpty());
  EXPECT_EQ(Probe("w1", "e1"), 19u);
  EXPECT_FALSE(store().figures().recovery_log_damaged);
}

// A log file behind a damaged one holds acknowledged records too: setting
// it aside is an ERROR and counts them.
TEST_F(DurableStoreDamageTest, ALaterLogWithRecordsSetAsideIsAnError) {
  StartOk(Options(/*checkpoint_bytes=*/2048));
  Workload();
  const uint64_t seq = ApplyUntilCheckpoints(13, 1);
  // Records in the newest log as well (the apply that rotated is its
  // first).
  ApplyW1Batches(seq, 3);
  const uint64_t newest = store().checkpoints_written() + 1;
  Crash();
  const std::string later = Path(WalFileName(newest));
  const size_t later_records = RecordStarts(later).size();
  ASSERT_GT(later_records, 0u);
  // Damage the newest checkpoint, so that the one before is loaded, and a
  // record in the middle of its log.
  std::string ckpt = ReadTestFile(Path(CheckpointFileName(newest)));
  ckpt[kFileHeaderBytes + 12] ^= 0x10;
  WriteTestFile(Path(CheckpointFileName(newest)), ckpt);
  const std::string cut = Path(WalFileName(newest - 1));
  const std::vector<uint64_t> starts = RecordStarts(cut);
  ASSERT_GE(starts.size(), 2u);
  FlipByte(cut, starts[starts.size() - 2] + kRecordHeaderBytes);

  TestLogCapture log;
  StartOk(Options(2048));
  EXPECT_TRUE(store().recovery().log_damaged);
  EXPECT_EQ(store().recovery().cut_records, 1u + later_records);
  EXPECT_TRUE(Files().count(WalFileName(newest) + ".corrupt"));
  EXPECT_TRUE(Logged(log, spdlog::level::err,
                     absl::StrCat(later,
                                  " follows a cut or missing log file; "
                                  "its ",
                                  later_records, " records")));
}

// A symbolic link planted under a state file's name stops the store with
// an error naming it; what it points to is left alone.
TEST_F(DurableStoreDamageTest, ALinkedStateFileIsRefused) {
  WriteLogAndCrash();
  for (const std::string& name : {WalFileName(1), CheckpointFileName(1)}) {
    SCOPED_TRACE(name);
    const std::string file = Path(name);
    const std::string elsewhere = Path("elsewhere");
    std::filesystem::rename(file, elsewhere);
    const std::string bytes = ReadTestFile(elsewhere);
    ASSERT_EQ(::symlink(elsewhere.c_str(), file.c_str()), 0);
    const absl::Status opened = Start(Options());
    EXPECT_FALSE(opened.ok());
    EXPECT_THAT(opened.message(), HasSubstr(file));
    EXPECT_THAT(opened.message(), HasSubstr("symbolic link"));
    EXPECT_EQ(ReadTestFile(elsewhere), bytes);
    Crash();
    std::filesystem::remove(file);
    std::filesystem::rename(elsewhere, file);
  }
  StartOk(Options());
  EXPECT_EQ(Probe("w1", "e1"), 20u);
}

}  // namespace durable_store_damage_test
}  // namespace kvindexer::durable
