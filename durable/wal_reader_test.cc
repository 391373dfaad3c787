#include "durable/wal_reader.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "durable/crc32c.h"
#include "durable/data_dir.h"
#include "durable/record_framing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_file_io.h"
#include "tests/support/test_files.h"
#include "tests/support/test_log_capture.h"
#include "tests/support/test_temp_dir.h"

namespace kvindexer::durable {
namespace wal_reader_test {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr uint64_t kGeneration = 7;

// A log of records of assorted sizes (the last three: a short, a long and a
// middling one), with each record's start in the file.
struct SampleLog {
  std::string bytes;
  std::vector<std::string> payloads;
  std::vector<size_t> starts;  // plus the file size at the end
};

SampleLog MakeSampleLog() {
  SampleLog log;
  log.bytes = EncodeFileHeader(FileKind::kWal, kGeneration);
  for (const size_t size : {30, 1, 200, 5, 60, 23}) {
    std::string payload;
    for (size_t i = 0; i < size; ++i) {
      payload.push_back(static_cast<char>('a' + (i + size) % 26));
    }
    log.starts.push_back(log.bytes.size());
    log.payloads.push_back(payload);
    AppendRecord(payload, &log.bytes);
  }
  log.starts.push_back(log.bytes.size());
  return log;
}

struct ScanResult {
  absl::StatusOr<WalScan> scan;
  std::vector<std::string> payloads;
};

// The piece size of the scans of the test being run (0: ScanWal's own).
size_t scan_piece_bytes = 0;

ScanResult Scan(const std::string& path, bool repair) {
  ScanResult result{WalScan{}, {}};
  auto keep = [&](std::string_view payload) {
    result.payloads.emplace_back(payload);
    return absl::OkStatus();
  };
  result.scan =
      scan_piece_bytes == 0
          ? ScanWal(path, kGeneration, repair, keep)
          : ScanWalInPieces(path, kGeneration, repair, keep, scan_piece_bytes);
  return result;
}

// The names in the log file's directory that start with its name and are
// not the file itself: the copies of cut bytes.
std::vector<std::string> CopiesOf(const std::string& path) {
  std::vector<std::string> out;
  const std::filesystem::path file(path);
  for (const auto& entry :
       std::filesystem::directory_iterator(file.parent_path())) {
    const std::string name = entry.path().filename().string();
    if (name != file.filename().string() &&
        name.rfind(file.filename().string(), 0) == 0) {
      out.push_back(name);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The checks every damaged log gets: the repairing scan hands over exactly
// the first `intact` records, reports the tail from the next record's start
// as torn, cuts the file there, and a second scan finds a clean log. With
// `damaged` (intact records follow the bad one) the cut bytes are first
// kept in <file>.corrupt-<offset>, which this deletes again; without, no
// copy is made.
void ExpectRepairedTo(const std::string& path, const SampleLog& log,
                      const std::string& damaged_bytes, size_t intact,
                      bool damaged, const std::string& what) {
  SCOPED_TRACE(what);
  const size_t damaged_size = damaged_bytes.size();
  const ScanResult first = Scan(path, /*repair=*/true);
  ASSERT_TRUE(first.scan.ok()) << first.scan.status();
  EXPECT_EQ(first.scan->damaged, damaged);
  const std::string copy =
      path + ".corrupt-" + std::to_string(log.starts[intact]);
  if (damaged) {
    EXPECT_EQ(first.scan->kept_copy, copy);
    EXPECT_EQ(ReadTestFile(copy), damaged_bytes.substr(log.starts[intact]));
    std::filesystem::remove(copy);
  } else {
    EXPECT_EQ(first.scan->kept_copy, "");
  }
  EXPECT_THAT(CopiesOf(path), IsEmpty());
  const std::vector<std::string> prefix(log.payloads.begin(),
                                        log.payloads.begin() + intact);
  EXPECT_EQ(first.payloads, prefix);
  EXPECT_TRUE(first.scan->torn);
  EXPECT_EQ(first.scan->records, intact);
  EXPECT_EQ(first.scan->bytes, log.starts[intact]);
  EXPECT_EQ(first.scan->torn_offset, log.starts[intact]);
  EXPECT_EQ(first.scan->dropped_bytes, damaged_size - log.starts[intact]);
  EXPECT_EQ(ReadTestFile(path), log.bytes.substr(0, log.starts[intact]));

  const ScanResult second = Scan(path, /*repair=*/true);
  ASSERT_TRUE(second.scan.ok()) << second.scan.status();
  EXPECT_FALSE(second.scan->torn);
  EXPECT_EQ(second.payloads, prefix);
}

// Every test runs with ScanWal's pieces and with pieces small enough that
// headers, lengths and payloads are split across reads.
class WalReaderTest : public ::testing::TestWithParam<size_t> {
 protected:
  void SetUp() override { scan_piece_bytes = GetParam(); }
  void TearDown() override { scan_piece_bytes = 0; }
  std::string path() const { return dir_.Sub(WalFileName(kGeneration)); }
  TestTempDir dir_;
};

INSTANTIATE_TEST_SUITE_P(Pieces, WalReaderTest,
                         ::testing::Values(size_t{0}, size_t{1}, size_t{5},
                                           size_t{64}));

TEST_P(WalReaderTest, ReadsAnIntactLog) {
  const SampleLog log = MakeSampleLog();
  WriteTestFile(path(), log.bytes);
  const ScanResult result = Scan(path(), /*repair=*/true);
  ASSERT_TRUE(result.scan.ok()) << result.scan.status();
  EXPECT_EQ(result.payloads, log.payloads);
  EXPECT_EQ(result.scan->generation, kGeneration);
  EXPECT_EQ(result.scan->records, log.payloads.size());
  EXPECT_EQ(result.scan->bytes, log.bytes.size());
  EXPECT_FALSE(result.scan->torn);
  EXPECT_EQ(ReadTestFile(path()), log.bytes);
}

TEST_P(WalReaderTest, AnEmptyLogHasNoRecords) {
  WriteTestFile(path(), EncodeFileHeader(FileKind::kWal, kGeneration));
  const ScanResult result = Scan(path(), /*repair=*/true);
  ASSERT_TRUE(result.scan.ok()) << result.scan.status();
  EXPECT_THAT(result.payloads, IsEmpty());
  EXPECT_FALSE(result.scan->torn);
  EXPECT_EQ(result.scan->bytes, kFileHeaderBytes);
}

// docs/durability.md, "Recovery": a crash mid-append leaves a cut record.
TEST_P(WalReaderTest, ACutAtEveryByteOfTheLastThreeRecords) {
  const SampleLog log = MakeSampleLog();
  const size_t records = log.payloads.size();
  for (size_t record = records - 3; record < records; ++record) {
    for (size_t cut = log.starts[record]; cut < log.starts[record + 1]; ++cut) {
      WriteTestFile(path(), log.bytes.substr(0, cut));
      const std::string what = "record " + std::to_string(record) +
                               " cut at byte " + std::to_string(cut);
      if (cut == log.starts[record]) {
        // A cut between records is a shorter, intact log.
        const ScanResult clean = Scan(path(), /*repair=*/true);
        ASSERT_TRUE(clean.scan.ok()) << what;
        EXPECT_FALSE(clean.scan->torn) << what;
        EXPECT_EQ(clean.payloads.size(), record) << what;
        continue;
      }
      ExpectRepairedTo(path(), log, log.bytes.substr(0, cut), record,
                       /*damaged=*/false, what);
    }
  }
}

// Every bit of the last three records, their headers (length, CRC) and
// their payloads. A bad last record is a torn tail; a bad one before it is
// damage, since intact records follow it.
TEST_P(WalReaderTest, AFlippedBitAnywhereInTheLastThreeRecords) {
  const SampleLog log = MakeSampleLog();
  const size_t records = log.payloads.size();
  for (size_t record = records - 3; record < records; ++record) {
    for (size_t bit = log.starts[record] * 8; bit < log.starts[record + 1] * 8;
         ++bit) {
      std::string flipped = log.bytes;
      flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
      WriteTestFile(path(), flipped);
      ExpectRepairedTo(
          path(), log, flipped, record, /*damaged=*/record + 1 < records,
          "record " + std::to_string(record) + " bit " + std::to_string(bit));
    }
  }
}

TEST_P(WalReaderTest, RecordsAfterABadOneAreNeverHandedOver) {
  const SampleLog log = MakeSampleLog();
  std::string bytes = log.bytes;
  // Damage the payload of the second record; four good ones follow it.
  bytes[log.starts[1] + kRecordHeaderBytes] ^= 0x40;
  WriteTestFile(path(), bytes);
  const ScanResult result = Scan(path(), /*repair=*/false);
  ASSERT_TRUE(result.scan.ok());
  EXPECT_THAT(result.payloads, ElementsAre(log.payloads[0]));
  EXPECT_TRUE(result.scan->torn);
  EXPECT_EQ(result.scan->torn_offset, log.starts[1]);
  // Without repair the file stays as it was.
  EXPECT_EQ(ReadTestFile(path()), bytes);
}

TEST_P(WalReaderTest, RepairLogsAWarningNamingFileOffsetAndBytes) {
  const SampleLog log = MakeSampleLog();
  WriteTestFile(path(), log.bytes.substr(0, log.bytes.size() - 3));
  const TestLogCapture capture;
  ASSERT_TRUE(Scan(path(), /*repair=*/true).scan.ok());
  const size_t offset = log.starts[log.payloads.size() - 1];
  EXPECT_THAT(capture.Lines(spdlog::level::warn),
              ElementsAre(HasSubstr(
                  "wal: truncated corrupt tail file=" + path() +
                  " offset=" + std::to_string(offset) + " dropped_bytes=" +
                  std::to_string(log.bytes.size() - 3 - offset))));
}

TEST_P(WalReaderTest, ZerosAfterTheLastRecordAreATornTail) {
  const SampleLog log = MakeSampleLog();
  const std::string zeros = log.bytes + std::string(4096, '\0');
  WriteTestFile(path(), zeros);
  ExpectRepairedTo(path(), log, zeros, log.payloads.size(), /*damaged=*/false,
                   "zero tail");
}

// A file shorter than a header was being created when the process died:
// torn, and rewritten as an empty log.
TEST_P(WalReaderTest, AShortHeaderTearsTheWholeFile) {
  const std::string header = EncodeFileHeader(FileKind::kWal, kGeneration);
  for (size_t cut = 0; cut < header.size(); ++cut) {
    const std::string bytes = header.substr(0, cut);
    SCOPED_TRACE("file of " + std::to_string(bytes.size()) + " bytes");
    WriteTestFile(path(), bytes);
    const TestLogCapture capture;
    const ScanResult first = Scan(path(), /*repair=*/true);
    ASSERT_TRUE(first.scan.ok()) << first.scan.status();
    EXPECT_TRUE(first.scan->torn);
    EXPECT_FALSE(first.scan->damaged);
    EXPECT_EQ(first.scan->torn_offset, 0u);
    EXPECT_EQ(first.scan->dropped_bytes, bytes.size());
    EXPECT_EQ(first.scan->generation, kGeneration);
    EXPECT_THAT(first.payloads, IsEmpty());
    EXPECT_THAT(capture.Lines(spdlog::level::warn),
                ElementsAre(HasSubstr("wal: truncated corrupt tail file=")));
    EXPECT_THAT(capture.Lines(spdlog::level::err), IsEmpty());
    EXPECT_THAT(CopiesOf(path()), IsEmpty());
    // Rewritten as a fresh, empty log of the expected generation.
    EXPECT_EQ(ReadTestFile(path()), header);
    const ScanResult second = Scan(path(), /*repair=*/true);
    ASSERT_TRUE(second.scan.ok());
    EXPECT_FALSE(second.scan->torn);
  }
}

// A whole header is synced before any record is written: when it is bad,
// the file was damaged later (or is not a log). Its bytes are kept, the
// loss is an ERROR, and the file is rewritten as an empty log.
TEST_P(WalReaderTest, ABadWholeHeaderIsDamageAndTheFileIsKept) {
  const SampleLog log = MakeSampleLog();
  std::string bad_crc = log.bytes;
  bad_crc[20] ^= 1;  // generation
  std::string foreign = log.bytes;
  foreign.replace(0, kFileHeaderBytes,
                  EncodeFileHeader(FileKind::kCheckpoint, kGeneration));
  const std::string header_only =
      EncodeFileHeader(FileKind::kCheckpoint, kGeneration);
  for (const std::string& bytes : {bad_crc, foreign, header_only}) {
    SCOPED_TRACE("file of " + std::to_string(bytes.size()) + " bytes");
    WriteTestFile(path(), bytes);
    const TestLogCapture capture;
    const ScanResult first = Scan(path(), /*repair=*/true);
    ASSERT_TRUE(first.scan.ok()) << first.scan.status();
    EXPECT_TRUE(first.scan->torn);
    EXPECT_TRUE(first.scan->damaged);
    EXPECT_THAT(first.payloads, IsEmpty());
    const uint64_t records = bytes.size() > kFileHeaderBytes ? 6 : 0;
    EXPECT_EQ(first.scan->dropped_records, records);
    EXPECT_EQ(first.scan->kept_copy, path() + ".corrupt-0");
    EXPECT_EQ(ReadTestFile(path() + ".corrupt-0"), bytes);
    EXPECT_THAT(capture.Lines(spdlog::level::warn), IsEmpty());
    EXPECT_THAT(
        capture.Lines(spdlog::level::err),
        ElementsAre(
            AllOf(HasSubstr("wal: damaged file header file=" + path() +
                            " dropped_bytes=" + std::to_string(bytes.size()) +
                            " intact_records_after=" + std::to_string(records)),
                  HasSubstr("kept in " + path() + ".corrupt-0"))));
    EXPECT_EQ(ReadTestFile(path()),
              EncodeFileHeader(FileKind::kWal, kGeneration));
    std::filesystem::remove(path() + ".corrupt-0");
  }
}

// The case the ERROR exists for: intact, acknowledged records after a
// damaged one are cut with it, so their bytes are kept first.
TEST_P(WalReaderTest, DamageInTheMiddleIsKeptAndLoggedAtError) {
  const SampleLog log = MakeSampleLog();
  std::string bytes = log.bytes;
  bytes[log.starts[1] + kRecordHeaderBytes] ^= 0x40;  // its one payload byte
  WriteTestFile(path(), bytes);
  const TestLogCapture capture;
  const ScanResult result = Scan(path(), /*repair=*/true);
  ASSERT_TRUE(result.scan.ok()) << result.scan.status();
  EXPECT_THAT(result.payloads, ElementsAre(log.payloads[0]));
  EXPECT_TRUE(result.scan->damaged);
  EXPECT_EQ(result.scan->dropped_records, 4u);
  const std::string copy = path() + ".corrupt-" + std::to_string(log.starts[1]);
  EXPECT_EQ(result.scan->kept_copy, copy);
  EXPECT_EQ(ReadTestFile(copy), bytes.substr(log.starts[1]));
  EXPECT_EQ(ReadTestFile(path()), bytes.substr(0, log.starts[1]));
  EXPECT_THAT(capture.Lines(spdlog::level::warn), IsEmpty());
  EXPECT_THAT(
      capture.Lines(spdlog::level::err),
      ElementsAre(AllOf(
          HasSubstr(
              "wal: damaged record in the middle of the log file=" + path() +
              " offset=" + std::to_string(log.starts[1]) +
              " dropped_bytes=" + std::to_string(bytes.size() - log.starts[1]) +
              " intact_records_after=4 (record checksum mismatch)"),
          HasSubstr("kept in " + copy))));
  // Cut: a second scan finds a clean log, and keeps nothing more.
  const ScanResult second = Scan(path(), /*repair=*/true);
  ASSERT_TRUE(second.scan.ok());
  EXPECT_FALSE(second.scan->torn);
  EXPECT_THAT(CopiesOf(path()),
              ElementsAre(copy.substr(dir_.path().size() + 1)));
}

// A damaged length sends the reader nowhere near the next record; the
// records behind it are still found.
TEST_P(WalReaderTest, DamageToALengthStillFindsTheRecordsBehindIt) {
  const SampleLog log = MakeSampleLog();
  // Record 2's length (200) as 16, which fits but fails the checksum, and
  // with a high byte that makes it cut short or impossible.
  const std::vector<std::pair<size_t, unsigned char>> damage = {
      {0, 0x10}, {3, 0x01}, {3, 0x3F}, {3, 0x40}, {3, 0xFF}};
  for (const auto& [byte, value] : damage) {
    SCOPED_TRACE("length byte " + std::to_string(byte) + " = " +
                 std::to_string(value));
    std::string bytes = log.bytes;
    bytes[log.starts[2] + byte] = static_cast<char>(value);
    WriteTestFile(path(), bytes);
    const ScanResult result = Scan(path(), /*repair=*/true);
    ASSERT_TRUE(result.scan.ok()) << result.scan.status();
    EXPECT_EQ(result.payloads.size(), 2u);
    EXPECT_TRUE(result.scan->damaged);
    EXPECT_EQ(result.scan->dropped_records, 3u);
    std::filesystem::remove(path() + ".corrupt-" +
                            std::to_string(log.starts[2]));
  }
}

// A second damage at the same offset (the copy of the first is still
// there) is kept beside it, never over it.
TEST_P(WalReaderTest, AKeptCopyIsNeverOverwritten) {
  const SampleLog log = MakeSampleLog();
  std::string bytes = log.bytes;
  bytes[log.starts[1] + kRecordHeaderBytes] ^= 0x01;
  const std::string copy = path() + ".corrupt-" + std::to_string(log.starts[1]);
  WriteTestFile(path(), bytes);
  ASSERT_TRUE(Scan(path(), /*repair=*/true).scan.ok());
  std::string again = log.bytes;
  again[log.starts[1] + kRecordHeaderBytes] ^= 0x02;
  WriteTestFile(path(), again);
  const ScanResult second = Scan(path(), /*repair=*/true);
  ASSERT_TRUE(second.scan.ok());
  EXPECT_EQ(second.scan->kept_copy, copy + ".1");
  EXPECT_EQ(ReadTestFile(copy), bytes.substr(log.starts[1]));
  EXPECT_EQ(ReadTestFile(copy + ".1"), again.substr(log.starts[1]));
}

// Without its copy nothing is cut: the start fails instead, naming why.
TEST_P(WalReaderTest, DamageThatCannotBeKeptIsNotCut) {
  const SampleLog log = MakeSampleLog();
  std::string bytes = log.bytes;
  bytes[log.starts[1] + kRecordHeaderBytes] ^= 0x01;
  WriteTestFile(path(), bytes);
  // A directory where the copy's temporary file would go.
  const std::string tmp =
      path() + ".corrupt-" + std::to_string(log.starts[1]) + ".tmp";
  ASSERT_TRUE(std::filesystem::create_directory(tmp));
  const ScanResult result = Scan(path(), /*repair=*/true);
  EXPECT_EQ(result.scan.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(result.scan.status().message(),
              AllOf(HasSubstr("cannot keep the"), HasSubstr(path()),
                    HasSubstr("nothing was cut")));
  EXPECT_EQ(ReadTestFile(path()), bytes);
}

// The cut goes through the scan's FileIo: when the disk refuses it, the
// scan fails naming the file, and a later scan on a healthy disk finds the
// same torn tail and cuts it.
TEST_P(WalReaderTest, ACutTheDiskRefusesFailsAndIsMadeLater) {
  const SampleLog log = MakeSampleLog();
  const size_t last = log.payloads.size() - 1;
  const std::string torn = log.bytes.substr(0, log.bytes.size() - 3);
  WriteTestFile(path(), torn);
  TestFileIo io;
  io.FailTruncates(EIO);
  const auto keep = [](std::string_view) { return absl::OkStatus(); };
  const absl::StatusOr<WalScan> refused =
      scan_piece_bytes == 0
          ? ScanWal(path(), kGeneration, /*repair=*/true, keep, io)
          : ScanWalInPieces(path(), kGeneration, /*repair=*/true, keep,
                            scan_piece_bytes, io);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(refused.status().message(),
              AllOf(HasSubstr("cannot repair"), HasSubstr(path()),
                    HasSubstr("ftruncate")));
  EXPECT_EQ(ReadTestFile(path()), torn);
  ExpectRepairedTo(path(), log, torn, last, /*damaged=*/false, "healed");
}

// Repair is recovery's; a scan without it (a compaction's) reads and
// reports, and neither classifies nor keeps.
TEST_P(WalReaderTest, WithoutRepairNothingIsKept) {
  const SampleLog log = MakeSampleLog();
  std::string bytes = log.bytes;
  bytes[log.starts[1] + kRecordHeaderBytes] ^= 0x01;
  WriteTestFile(path(), bytes);
  const ScanResult result = Scan(path(), /*repair=*/false);
  ASSERT_TRUE(result.scan.ok());
  EXPECT_TRUE(result.scan->torn);
  EXPECT_FALSE(result.scan->damaged);
  EXPECT_THAT(CopiesOf(path()), IsEmpty());
}

TEST_P(WalReaderTest, ANewerFormatVersionIsRefusedAndLeftAlone) {
  std::string bytes = EncodeFileHeader(FileKind::kWal, kGeneration);
  bytes[8] = static_cast<char>(kFormatVersion + 1);
  const uint32_t crc = Crc32c(std::string_view(bytes).substr(0, 24));
  for (int i = 0; i < 4; ++i) {
    bytes[24 + i] = static_cast<char>((crc >> (8 * i)) & 0xFFu);
  }
  bytes += "records of a format we do not know";
  WriteTestFile(path(), bytes);
  const ScanResult result = Scan(path(), /*repair=*/true);
  EXPECT_EQ(result.scan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.scan.status().message(), HasSubstr(path()));
  EXPECT_THAT(result.scan.status().message(),
              HasSubstr(absl::StrCat("format version ", kFormatVersion + 1)));
  EXPECT_THAT(result.scan.status().message(),
              HasSubstr(absl::StrCat("version ", kFormatVersion)));
  EXPECT_EQ(ReadTestFile(path()), bytes);
}

TEST_P(WalReaderTest, AMisnamedLogIsAnErrorNotATear) {
  const std::string bytes = EncodeFileHeader(FileKind::kWal, kGeneration + 1);
  WriteTestFile(path(), bytes);
  const ScanResult result = Scan(path(), /*repair=*/true);
  EXPECT_EQ(result.scan.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ReadTestFile(path()), bytes);
}

TEST_P(WalReaderTest, TheCallbacksErrorStopsTheScan) {
  const SampleLog log = MakeSampleLog();
  WriteTestFile(path(), log.bytes);
  int calls = 0;
  auto second_fails = [&](std::string_view) {
    return ++calls == 2 ? absl::InvalidArgumentError("bad record")
                        : absl::OkStatus();
  };
  const absl::StatusOr<WalScan> scan =
      GetParam() == 0 ? ScanWal(path(), kGeneration, true, second_fails)
                      : ScanWalInPieces(path(), kGeneration, true, second_fails,
                                        GetParam());
  EXPECT_EQ(scan.status(), absl::InvalidArgumentError("bad record"));
  EXPECT_EQ(calls, 2);
}

TEST_P(WalReaderTest, AMissingFileIsNotFound) {
  EXPECT_EQ(Scan(path(), true).scan.status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace wal_reader_test
}  // namespace kvindexer::durable
