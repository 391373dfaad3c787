// Read errors while the data directory's files are read back
// (docs/durability.md, "Recovery"): a read that fails is an I/O error,
// never damage. Nothing is cut, renamed or set aside, the start stops with
// an error naming the file, and the next start on a healthy disk recovers
// everything.
#include <cerrno>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "durable/checkpoint_file.h"
#include "durable/data_dir.h"
#include "durable/file_window.h"
#include "durable/record_framing.h"
#include "durable/wal_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/durable_store_fixture.h"
#include "tests/support/forwarding_file_io.h"
#include "tests/support/test_files.h"
#include "tests/support/test_log_capture.h"
#include "tests/support/test_temp_dir.h"

namespace kvindexer::durable {
namespace read_failure_test {

using ::testing::AllOf;
using ::testing::HasSubstr;

// Reads of files whose path ends with `suffix` succeed `healthy` times;
// every later one fails with `err` (EINTR is passed through once per
// failure, then the read goes ahead). Other files read normally. One
// reader at a time, as recovery reads.
class ReadFailingIo final : public ForwardingFileIo {
 public:
  ReadFailingIo(std::string suffix, int healthy, int err = EIO)
      : suffix_(std::move(suffix)), healthy_(healthy), err_(err) {}

  ssize_t Pread(int fd, void* data, size_t size, off_t offset) override {
    if (FdPathEndsWith(fd, suffix_)) {
      ++reads_;
      if (reads_ > healthy_) {
        ++failures_;
        if (err_ != EINTR || failures_ % 2 == 1) {
          errno = err_;
          return -1;
        }
      }
    }
    return ForwardingFileIo::Pread(fd, data, size, offset);
  }

  // Calls for the file, failed ones included.
  int reads() const { return reads_; }
  int failures() const { return failures_; }

 private:
  const std::string suffix_;
  const int healthy_;
  const int err_;
  int reads_ = 0;
  int failures_ = 0;
};

constexpr uint64_t kGeneration = 3;

std::vector<std::string> Payloads() {
  std::vector<std::string> out;
  for (int i = 0; i < 12; ++i) out.push_back(std::string(20 + i, 'a' + i));
  return out;
}

class ReadFailureTest : public ::testing::Test {
 protected:
  std::string WalPath() const { return dir_.Sub(WalFileName(kGeneration)); }
  std::string CheckpointPath() const {
    return dir_.Sub(CheckpointFileName(kGeneration));
  }
  std::string WriteWal() {
    std::string bytes = EncodeFileHeader(FileKind::kWal, kGeneration);
    for (const std::string& payload : Payloads()) AppendRecord(payload, &bytes);
    WriteTestFile(WalPath(), bytes);
    return bytes;
  }
  std::string WriteCheckpoint() {
    auto writer =
        CheckpointWriter::Begin(dir_.path(), kGeneration, &FileIo::Real());
    EXPECT_TRUE(writer.ok()) << writer.status();
    if (!writer.ok()) return "";
    for (const std::string& payload : Payloads()) {
      EXPECT_TRUE((*writer)->Add(payload).ok());
    }
    EXPECT_TRUE((*writer)->Commit().ok());
    return ReadTestFile(CheckpointPath());
  }
  std::set<std::string> Names() const {
    std::set<std::string> out;
    for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
      out.insert(entry.path().filename().string());
    }
    return out;
  }

  TestTempDir dir_;
};

TEST_F(ReadFailureTest, AWindowReportsAFailedReadNamingTheFile) {
  WriteTestFile(dir_.Sub("file"), std::string(100, 'x'));
  ReadFailingIo io("/file", /*healthy=*/1);
  absl::StatusOr<FileWindow> window =
      FileWindow::Open(dir_.Sub("file"), 10, io);
  ASSERT_TRUE(window.ok()) << window.status();
  ASSERT_TRUE(window->Hold(0, 10).ok());
  const absl::StatusOr<std::string_view> held = window->Hold(10, 10);
  EXPECT_EQ(held.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(held.status().message(),
              AllOf(HasSubstr("cannot read"), HasSubstr(dir_.Sub("file")),
                    HasSubstr("Input/output error")));
}

TEST_F(ReadFailureTest, AnInterruptedReadIsRetried) {
  const std::string bytes(100, 'y');
  WriteTestFile(dir_.Sub("file"), bytes);
  ReadFailingIo io("/file", /*healthy=*/0, EINTR);
  absl::StatusOr<FileWindow> window =
      FileWindow::Open(dir_.Sub("file"), 10, io);
  ASSERT_TRUE(window.ok()) << window.status();
  const absl::StatusOr<std::string_view> held = window->Hold(0, 100);
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_EQ(*held, bytes);
  EXPECT_GE(io.failures(), 1);
}

// The scan stops at the failure with what it handed over so far, and a
// scan that would repair a bad tail cuts nothing: the bytes it could not
// read are not known to be bad.
TEST_F(ReadFailureTest, ALogScanStopsAtAFailedReadAndCutsNothing) {
  const std::string bytes = WriteWal();
  for (const int healthy : {0, 1, 4, 9}) {
    SCOPED_TRACE(healthy);
    ReadFailingIo io(WalFileName(kGeneration), healthy);
    std::vector<std::string> handed;
    const absl::StatusOr<WalScan> scan = ScanWalInPieces(
        WalPath(), kGeneration, /*repair=*/true,
        [&](std::string_view payload) {
          handed.emplace_back(payload);
          return absl::OkStatus();
        },
        /*piece_bytes=*/16, io);
    EXPECT_EQ(scan.status().code(), absl::StatusCode::kInternal);
    EXPECT_THAT(scan.status().message(), HasSubstr(WalPath()));
    EXPECT_EQ(io.failures(), 1);
    EXPECT_LT(handed.size(), Payloads().size());
    const std::vector<std::string> payloads = Payloads();
    for (size_t i = 0; i < handed.size(); ++i)
      EXPECT_EQ(handed[i], payloads[i]);
    EXPECT_EQ(ReadTestFile(WalPath()), bytes);
    EXPECT_EQ(Names(), std::set<std::string>{WalFileName(kGeneration)});
  }
}

// Whether the read fails while the file is checked or while it is handed
// over, the outcome is INTERNAL, never DATA_LOSS (which would have recovery
// set the file aside as damaged).
TEST_F(ReadFailureTest, ACheckpointReadThatFailsIsInternalInEitherPass) {
  WriteCheckpoint();
  ReadFailingIo count(CheckpointFileName(kGeneration), 1'000'000);
  ASSERT_TRUE(ReadCheckpointInPieces(
                  CheckpointPath(),
                  [](std::string_view) { return absl::OkStatus(); }, 16, count)
                  .ok());
  const int both_passes = count.reads();
  ASSERT_GE(both_passes, 4);
  for (const int healthy : {0, both_passes / 2 - 1, both_passes - 1}) {
    SCOPED_TRACE(healthy);
    ReadFailingIo io(CheckpointFileName(kGeneration), healthy);
    size_t handed = 0;
    const absl::StatusOr<CheckpointRead> read = ReadCheckpointInPieces(
        CheckpointPath(),
        [&](std::string_view) {
          ++handed;
          return absl::OkStatus();
        },
        16, io);
    EXPECT_EQ(read.status().code(), absl::StatusCode::kInternal);
    EXPECT_THAT(read.status().message(), HasSubstr(CheckpointPath()));
    // Only the second pass hands records over.
    if (healthy < both_passes / 2) {
      EXPECT_EQ(handed, 0u);
    }
    EXPECT_LT(handed, Payloads().size());
  }
}

class ReadFailureStoreTest : public DurableStoreTest {
 protected:
  // Workload and more applies in the log after the directory's first
  // checkpoint, then a crash; returns the state before it. A start that
  // took a failed read of the checkpoint for damage would set it aside and
  // start empty, so the checkpoint need not hold placements.
  std::string WriteStateAndCrash() {
    StartOk(Options());
    Workload();
    ApplyW1Batches(13, 5);
    const std::string before = State();
    Crash();
    return before;
  }
  std::map<std::string, std::string> Contents() const {
    std::map<std::string, std::string> out;
    for (const std::string& name : Files())
      out[name] = ReadTestFile(Path(name));
    return out;
  }
  // Starts with reads of files ending in `suffix` failing from the first;
  // expects the start to fail naming such a file and to change no file.
  void ExpectStartFailsAndChangesNothing(const std::string& suffix) {
    const std::map<std::string, std::string> files = Contents();
    ReadFailingIo io(suffix, /*healthy=*/0);
    DurableOptions options = Options();
    options.io = &io;
    const absl::Status s = Start(options);
    Crash();
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
    EXPECT_THAT(s.message(), AllOf(HasSubstr("cannot read"), HasSubstr(suffix),
                                   HasSubstr("Input/output error")));
    EXPECT_GE(io.failures(), 1);
    EXPECT_EQ(Contents(), files);
  }
};

// A log read that fails is not a torn tail (nothing is cut), and a
// checkpoint read that fails is not damage (the checkpoint is not set aside
// for an older one): either stops the start, and the next start recovers.
TEST_F(ReadFailureStoreTest, AFailedReadStopsTheStartAndChangesNoFile) {
  const std::string before = WriteStateAndCrash();
  ExpectStartFailsAndChangesNothing(".log");
  ExpectStartFailsAndChangesNothing(".ckpt");
  StartOk(Options());
  EXPECT_FALSE(store().recovery().checkpoint_fallback);
  EXPECT_FALSE(store().recovery().torn_tail);
  EXPECT_EQ(State(), before);
}

// A log file set aside behind a missing one is read to count what is lost;
// when that read fails it is not taken to hold nothing: an ERROR says so,
// and the file is still renamed, not deleted.
TEST_F(ReadFailureStoreTest, ALogSetAsideThatCannotBeReadIsAnError) {
  WriteStateAndCrash();
  std::string bytes = EncodeFileHeader(FileKind::kWal, 3);
  AppendRecord("a record", &bytes);
  WriteTestFile(Path(WalFileName(3)), bytes);
  // The header's version check reads; the count does not.
  ReadFailingIo io(WalFileName(3), /*healthy=*/1);
  DurableOptions options = Options();
  options.io = &io;
  TestLogCapture log;
  StartOk(options);
  auto close = CloseOnExit();
  EXPECT_GE(io.failures(), 1);
  EXPECT_TRUE(store().recovery().log_damaged);
  EXPECT_TRUE(Logged(log, spdlog::level::err, "could not be read"));
  EXPECT_FALSE(Logged(log, spdlog::level::warn, "holds no record"));
  EXPECT_EQ(ReadTestFile(Path(WalFileName(3) + ".corrupt")), bytes);
}

}  // namespace read_failure_test
}  // namespace kvindexer::durable
