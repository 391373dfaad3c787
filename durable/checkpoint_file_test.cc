#include "durable/checkpoint_file.h"

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "durable/crc32c.h"
#include "durable/data_dir.h"
#include "durable/record_framing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_file_io.h"
#include "tests/support/test_files.h"
#include "tests/support/test_temp_dir.h"

namespace kvindexer::durable {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr uint64_t kGeneration = 4;

struct ReadResult {
  absl::StatusOr<CheckpointRead> read;
  std::vector<std::string> payloads;
};

// The piece size of the reads of the test being run (0: ReadCheckpoint's
// own).
size_t read_piece_bytes = 0;

ReadResult Read(const std::string& path) {
  ReadResult result{CheckpointRead{}, {}};
  auto keep = [&](std::string_view payload) {
    result.payloads.emplace_back(payload);
    return absl::OkStatus();
  };
  result.read = read_piece_bytes == 0
                    ? ReadCheckpoint(path, keep)
                    : ReadCheckpointInPieces(path, keep, read_piece_bytes);
  return result;
}

// Every test runs with ReadCheckpoint's pieces and with pieces small enough
// that records are split across reads.
class CheckpointFileTest : public ::testing::TestWithParam<size_t> {
 protected:
  void SetUp() override { read_piece_bytes = GetParam(); }
  void TearDown() override { read_piece_bytes = 0; }

  std::string FinalPath() const {
    return dir_.Sub(CheckpointFileName(kGeneration));
  }
  std::string TmpPath() const { return FinalPath() + ".tmp"; }

  // Writes and commits a checkpoint of `payloads`; returns its bytes.
  std::string WriteCheckpoint(const std::vector<std::string>& payloads) {
    auto writer = CheckpointWriter::Begin(dir_.path(), kGeneration, &io_);
    EXPECT_TRUE(writer.ok()) << writer.status();
    if (!writer.ok()) return "";
    for (const std::string& payload : payloads) {
      EXPECT_TRUE((*writer)->Add(payload).ok());
    }
    EXPECT_TRUE((*writer)->Commit().ok());
    return ReadTestFile(FinalPath());
  }

  static std::vector<std::string> SmallPayloads() {
    return {"worker a", "worker b", std::string(100, 'p'), "marker"};
  }

  TestTempDir dir_;
  TestFileIo io_;
};

INSTANTIATE_TEST_SUITE_P(Pieces, CheckpointFileTest,
                         ::testing::Values(size_t{0}, size_t{1}, size_t{9},
                                           size_t{64}, size_t{1000}));

TEST_P(CheckpointFileTest, CommitPutsTheFileInPlaceAndItReadsBack) {
  std::vector<std::string> payloads;
  // Enough to cross several 1 MiB blocks.
  for (int i = 0; i < 40; ++i) {
    payloads.push_back(std::string(100000 + i, static_cast<char>('a' + i)));
  }
  auto writer = CheckpointWriter::Begin(dir_.path(), kGeneration, &io_);
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (const std::string& payload : payloads) {
    ASSERT_TRUE((*writer)->Add(payload).ok());
  }
  EXPECT_TRUE(TestFileExists(TmpPath()));
  EXPECT_FALSE(TestFileExists(FinalPath()));
  ASSERT_TRUE((*writer)->Commit().ok());
  EXPECT_FALSE(TestFileExists(TmpPath()));
  // The file, then the directory.
  EXPECT_EQ(io_.fsyncs(), 2);
  const uint64_t bytes = (*writer)->bytes();
  writer->reset();
  ASSERT_TRUE(TestFileExists(FinalPath()));

  const std::string file = ReadTestFile(FinalPath());
  EXPECT_EQ(file.size(), bytes);
  std::string expected = EncodeFileHeader(FileKind::kCheckpoint, kGeneration);
  for (const std::string& payload : payloads) AppendRecord(payload, &expected);
  AppendRecord(EncodeCheckpointTrailer(payloads.size()), &expected);
  EXPECT_TRUE(file == expected);

  const ReadResult result = Read(FinalPath());
  ASSERT_TRUE(result.read.ok()) << result.read.status();
  EXPECT_TRUE(result.payloads == payloads);
  EXPECT_EQ(result.read->generation, kGeneration);
  EXPECT_EQ(result.read->records, payloads.size());
  EXPECT_EQ(result.read->bytes, bytes);
}

TEST_P(CheckpointFileTest, AnEmptyCheckpointIsValid) {
  WriteCheckpoint({});
  const ReadResult result = Read(FinalPath());
  ASSERT_TRUE(result.read.ok()) << result.read.status();
  EXPECT_EQ(result.read->records, 0u);
  EXPECT_THAT(result.payloads, IsEmpty());
}

TEST_P(CheckpointFileTest, WithoutCommitTheTemporaryFileIsRemoved) {
  {
    auto writer = CheckpointWriter::Begin(dir_.path(), kGeneration, &io_);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Add("abandoned").ok());
  }
  EXPECT_FALSE(TestFileExists(TmpPath()));
  EXPECT_FALSE(TestFileExists(FinalPath()));
}

TEST_P(CheckpointFileTest, AStaleTemporaryFileIsReplaced) {
  WriteTestFile(TmpPath(), std::string(5000, 'z'));
  const std::string file = WriteCheckpoint({"fresh"});
  EXPECT_EQ(file.size(), kFileHeaderBytes + 8 + 5 + 8 + 16);
  ASSERT_TRUE(Read(FinalPath()).read.ok());
}

TEST_P(CheckpointFileTest, AFullDiskFailsAndLeavesNothingBehind) {
  for (const bool fail_in_commit : {false, true}) {
    SCOPED_TRACE(fail_in_commit ? "in Commit" : "in Add");
    auto writer = CheckpointWriter::Begin(dir_.path(), kGeneration, &io_);
    ASSERT_TRUE(writer.ok());
    io_.FailWritesAfter(10, ENOSPC);
    absl::Status status;
    if (!fail_in_commit) {
      // Big enough to make Add write a block.
      status = (*writer)->Add(std::string(2 << 20, 'x'));
    } else {
      ASSERT_TRUE((*writer)->Add("small").ok());
      status = (*writer)->Commit();
    }
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(status.message(), HasSubstr(TmpPath()));
    EXPECT_THAT(status.message(), HasSubstr("No space left on device"));
    // The writer stays failed.
    EXPECT_EQ((*writer)->Commit(), status);
    writer->reset();
    io_.HealWrites();
    EXPECT_FALSE(TestFileExists(TmpPath()));
    EXPECT_FALSE(TestFileExists(FinalPath()));
  }
}

TEST_P(CheckpointFileTest, AFailedFsyncDoesNotCommit) {
  auto writer = CheckpointWriter::Begin(dir_.path(), kGeneration, &io_);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Add("x").ok());
  io_.FailSyncs(EIO);
  EXPECT_EQ((*writer)->Commit().code(), absl::StatusCode::kUnavailable);
  writer->reset();
  EXPECT_FALSE(TestFileExists(TmpPath()));
  EXPECT_FALSE(TestFileExists(FinalPath()));
}

TEST_P(CheckpointFileTest, RejectsEmptyAndTrailerShapedRecords) {
  auto writer = CheckpointWriter::Begin(dir_.path(), kGeneration, &io_);
  ASSERT_TRUE(writer.ok());
  EXPECT_EQ((*writer)->Add("").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*writer)->Add(EncodeCheckpointTrailer(0)).code(),
            absl::StatusCode::kInvalidArgument);
}

// Nothing of a damaged checkpoint may be applied: every check runs before
// the first record is handed over.
TEST_P(CheckpointFileTest, AFlippedBitAnywhereIsDataLossWithNothingHandedOver) {
  const std::string file = WriteCheckpoint(SmallPayloads());
  for (size_t bit = 0; bit < file.size() * 8; ++bit) {
    // Bit 64 and bits 66..95 raise the version field (2): checked below as a
    // newer format. Bit 65 lowers it to 0, which the CRC catches.
    if (bit >= 64 && bit < 96 && bit != 65) continue;
    std::string flipped = file;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    WriteTestFile(FinalPath(), flipped);
    const ReadResult result = Read(FinalPath());
    EXPECT_EQ(result.read.status().code(), absl::StatusCode::kDataLoss)
        << "bit " << bit;
    EXPECT_THAT(result.read.status().message(), HasSubstr(FinalPath()));
    ASSERT_THAT(result.payloads, IsEmpty()) << "bit " << bit;
  }
}

TEST_P(CheckpointFileTest, ACutAnywhereIsDataLossWithNothingHandedOver) {
  const std::string file = WriteCheckpoint(SmallPayloads());
  for (size_t cut = 0; cut < file.size(); ++cut) {
    WriteTestFile(FinalPath(), file.substr(0, cut));
    const ReadResult result = Read(FinalPath());
    EXPECT_EQ(result.read.status().code(), absl::StatusCode::kDataLoss)
        << "cut at " << cut;
    ASSERT_THAT(result.payloads, IsEmpty()) << "cut at " << cut;
  }
}

TEST_P(CheckpointFileTest, AMissingTrailerIsDataLoss) {
  std::string file = EncodeFileHeader(FileKind::kCheckpoint, kGeneration);
  for (const std::string& payload : SmallPayloads()) {
    AppendRecord(payload, &file);
  }
  WriteTestFile(FinalPath(), file);
  const ReadResult result = Read(FinalPath());
  EXPECT_EQ(result.read.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(result.read.status().message(), HasSubstr("no trailer"));
  EXPECT_THAT(result.payloads, IsEmpty());
}

TEST_P(CheckpointFileTest, AWrongTrailerCountOrRecordsAfterItAreDataLoss) {
  std::string miscounted = EncodeFileHeader(FileKind::kCheckpoint, kGeneration);
  AppendRecord("one", &miscounted);
  AppendRecord(EncodeCheckpointTrailer(2), &miscounted);
  WriteTestFile(FinalPath(), miscounted);
  ReadResult result = Read(FinalPath());
  EXPECT_EQ(result.read.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(result.read.status().message(), HasSubstr("trailer counts 2"));
  EXPECT_THAT(result.payloads, IsEmpty());

  std::string extra = WriteCheckpoint({"one"});
  AppendRecord("after the end", &extra);
  WriteTestFile(FinalPath(), extra);
  result = Read(FinalPath());
  EXPECT_EQ(result.read.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(result.read.status().message(), HasSubstr("after the trailer"));
  EXPECT_THAT(result.payloads, IsEmpty());
}

TEST_P(CheckpointFileTest, AWalIsNotACheckpoint) {
  WriteTestFile(FinalPath(), EncodeFileHeader(FileKind::kWal, kGeneration));
  const ReadResult result = Read(FinalPath());
  EXPECT_EQ(result.read.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(result.read.status().message(), HasSubstr("bad magic"));
}

TEST_P(CheckpointFileTest, ANewerFormatVersionIsRefusedAndLeftAlone) {
  std::string file = WriteCheckpoint(SmallPayloads());
  file[8] = static_cast<char>(kFormatVersion + 1);
  const uint32_t crc = Crc32c(std::string_view(file).substr(0, 24));
  for (int i = 0; i < 4; ++i) {
    file[24 + i] = static_cast<char>((crc >> (8 * i)) & 0xFFu);
  }
  WriteTestFile(FinalPath(), file);
  const ReadResult result = Read(FinalPath());
  EXPECT_EQ(result.read.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.read.status().message(), HasSubstr(FinalPath()));
  EXPECT_THAT(result.read.status().message(),
              HasSubstr(absl::StrCat("format version ", kFormatVersion + 1)));
  EXPECT_THAT(result.read.status().message(),
              HasSubstr(absl::StrCat("version ", kFormatVersion)));
  EXPECT_THAT(result.payloads, IsEmpty());
  EXPECT_EQ(ReadTestFile(FinalPath()), file);
}

TEST_P(CheckpointFileTest, TheCallbacksErrorStopsTheRead) {
  WriteCheckpoint(SmallPayloads());
  int calls = 0;
  auto second_fails = [&](std::string_view) {
    return ++calls == 2 ? absl::InvalidArgumentError("cannot apply")
                        : absl::OkStatus();
  };
  const absl::StatusOr<CheckpointRead> read =
      GetParam() == 0
          ? ReadCheckpoint(FinalPath(), second_fails)
          : ReadCheckpointInPieces(FinalPath(), second_fails, GetParam());
  EXPECT_EQ(read.status(), absl::InvalidArgumentError("cannot apply"));
  EXPECT_EQ(calls, 2);
}

// The second read hands over what the first checked. A record that reads
// differently by then (nothing writes a checkpoint in place; a failing disk
// could) is INTERNAL, not DATA_LOSS: records were handed over already, so an
// older checkpoint must not be loaded on top of them.
TEST_P(CheckpointFileTest, ARecordChangedBetweenTheTwoReadsIsInternal) {
  // The change must come after the second pass's first read: a piece of
  // the default size or of 1,000 bytes holds this small file whole.
  const size_t piece = GetParam() == 0 || GetParam() > 64 ? 7 : GetParam();
  const std::string file = WriteCheckpoint(SmallPayloads());
  // The third record's last payload byte.
  const size_t third_end = file.find(std::string(100, 'p')) + 99;
  std::vector<std::string> handed;
  const absl::StatusOr<CheckpointRead> read = ReadCheckpointInPieces(
      FinalPath(),
      [&](std::string_view payload) {
        handed.emplace_back(payload);
        if (handed.size() == 1) {
          // In place: the reader holds the file open.
          std::fstream out(FinalPath(),
                           std::ios::binary | std::ios::in | std::ios::out);
          out.seekp(static_cast<std::streamoff>(third_end));
          out.put('q');
        }
        return absl::OkStatus();
      },
      piece);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(read.status().message(),
              AllOf(HasSubstr(FinalPath()), HasSubstr("record 2"),
                    HasSubstr("read intact and then")));
  EXPECT_THAT(handed, ElementsAre("worker a", "worker b"));
}

}  // namespace
}  // namespace kvindexer::durable
