#include "durable/wal_reader.h"

#include <string>
#include <vector>

#include "durable/crc32c.h"
#include "durable/data_dir.h"
#include "durable/record_framing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_files.h"
#include "tests/support/test_log_capture.h"
#include "tests/support/test_temp_dir.h"

namespace kvindexer::durable {
namespace {

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

ScanResult Scan(const std::string& path, bool repair) {
  ScanResult result{WalScan{}, {}};
  result.scan =
      ScanWal(path, kGeneration, repair, [&](std::string_view payload) {
        result.payloads.emplace_back(payload);
        return absl::OkStatus();
      });
  return result;
}

// The checks every damaged log gets: the repairing scan hands over exactly
// the first `intact` records, reports the tail from the next record's start
// as torn, cuts the file there, and a second scan finds a clean log.
void ExpectRepairedTo(const std::string& path, const SampleLog& log,
                      size_t damaged_size, size_t intact,
                      const std::string& what) {
  SCOPED_TRACE(what);
  const ScanResult first = Scan(path, /*repair=*/true);
  ASSERT_TRUE(first.scan.ok()) << first.scan.status();
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

class WalReaderTest : public ::testing::Test {
 protected:
  std::string path() const { return dir_.Sub(WalFileName(kGeneration)); }
  TestTempDir dir_;
};

TEST_F(WalReaderTest, ReadsAnIntactLog) {
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

TEST_F(WalReaderTest, AnEmptyLogHasNoRecords) {
  WriteTestFile(path(), EncodeFileHeader(FileKind::kWal, kGeneration));
  const ScanResult result = Scan(path(), /*repair=*/true);
  ASSERT_TRUE(result.scan.ok()) << result.scan.status();
  EXPECT_THAT(result.payloads, IsEmpty());
  EXPECT_FALSE(result.scan->torn);
  EXPECT_EQ(result.scan->bytes, kFileHeaderBytes);
}

// docs/durability.md, "Recovery": a crash mid-append leaves a cut record.
TEST_F(WalReaderTest, ACutAtEveryByteOfTheLastThreeRecords) {
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
      ExpectRepairedTo(path(), log, cut, record, what);
    }
  }
}

// Every bit of the last three records, their headers (length, CRC) and
// their payloads.
TEST_F(WalReaderTest, AFlippedBitAnywhereInTheLastThreeRecords) {
  const SampleLog log = MakeSampleLog();
  const size_t records = log.payloads.size();
  for (size_t record = records - 3; record < records; ++record) {
    for (size_t bit = log.starts[record] * 8; bit < log.starts[record + 1] * 8;
         ++bit) {
      std::string flipped = log.bytes;
      flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
      WriteTestFile(path(), flipped);
      ExpectRepairedTo(
          path(), log, flipped.size(), record,
          "record " + std::to_string(record) + " bit " + std::to_string(bit));
    }
  }
}

TEST_F(WalReaderTest, RecordsAfterABadOneAreNeverHandedOver) {
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

TEST_F(WalReaderTest, RepairLogsAWarningNamingFileOffsetAndBytes) {
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

TEST_F(WalReaderTest, ZerosAfterTheLastRecordAreATornTail) {
  const SampleLog log = MakeSampleLog();
  WriteTestFile(path(), log.bytes + std::string(4096, '\0'));
  ExpectRepairedTo(path(), log, log.bytes.size() + 4096, log.payloads.size(),
                   "zero tail");
}

TEST_F(WalReaderTest, AShortOrCorruptHeaderTearsTheWholeFile) {
  const std::string header = EncodeFileHeader(FileKind::kWal, kGeneration);
  std::vector<std::string> damaged;
  for (size_t cut = 0; cut < header.size(); ++cut) {
    damaged.push_back(header.substr(0, cut));
  }
  std::string bad_crc = header + "trailing bytes";
  bad_crc[20] ^= 1;  // generation
  damaged.push_back(bad_crc);
  damaged.push_back(EncodeFileHeader(FileKind::kCheckpoint, kGeneration));
  for (const std::string& bytes : damaged) {
    SCOPED_TRACE("file of " + std::to_string(bytes.size()) + " bytes");
    WriteTestFile(path(), bytes);
    const TestLogCapture capture;
    const ScanResult first = Scan(path(), /*repair=*/true);
    ASSERT_TRUE(first.scan.ok()) << first.scan.status();
    EXPECT_TRUE(first.scan->torn);
    EXPECT_EQ(first.scan->torn_offset, 0u);
    EXPECT_EQ(first.scan->dropped_bytes, bytes.size());
    EXPECT_EQ(first.scan->generation, kGeneration);
    EXPECT_THAT(first.payloads, IsEmpty());
    EXPECT_THAT(capture.Lines(spdlog::level::warn),
                ElementsAre(HasSubstr("wal: truncated corrupt tail file=")));
    // Rewritten as a fresh, empty log of the expected generation.
    EXPECT_EQ(ReadTestFile(path()), header);
    const ScanResult second = Scan(path(), /*repair=*/true);
    ASSERT_TRUE(second.scan.ok());
    EXPECT_FALSE(second.scan->torn);
  }
}

TEST_F(WalReaderTest, ANewerFormatVersionIsRefusedAndLeftAlone) {
  std::string bytes = EncodeFileHeader(FileKind::kWal, kGeneration);
  bytes[8] = 2;
  const uint32_t crc = Crc32c(std::string_view(bytes).substr(0, 24));
  for (int i = 0; i < 4; ++i) {
    bytes[24 + i] = static_cast<char>((crc >> (8 * i)) & 0xFFu);
  }
  bytes += "records of a format we do not know";
  WriteTestFile(path(), bytes);
  const ScanResult result = Scan(path(), /*repair=*/true);
  EXPECT_EQ(result.scan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.scan.status().message(), HasSubstr(path()));
  EXPECT_THAT(result.scan.status().message(), HasSubstr("format version 2"));
  EXPECT_THAT(result.scan.status().message(), HasSubstr("version 1"));
  EXPECT_EQ(ReadTestFile(path()), bytes);
}

TEST_F(WalReaderTest, AMisnamedLogIsAnErrorNotATear) {
  const std::string bytes = EncodeFileHeader(FileKind::kWal, kGeneration + 1);
  WriteTestFile(path(), bytes);
  const ScanResult result = Scan(path(), /*repair=*/true);
  EXPECT_EQ(result.scan.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ReadTestFile(path()), bytes);
}

TEST_F(WalReaderTest, TheCallbacksErrorStopsTheScan) {
  const SampleLog log = MakeSampleLog();
  WriteTestFile(path(), log.bytes);
  int calls = 0;
  const absl::StatusOr<WalScan> scan =
      ScanWal(path(), kGeneration, true, [&](std::string_view) {
        return ++calls == 2 ? absl::InvalidArgumentError("bad record")
                            : absl::OkStatus();
      });
  EXPECT_EQ(scan.status(), absl::InvalidArgumentError("bad record"));
  EXPECT_EQ(calls, 2);
}

TEST_F(WalReaderTest, AMissingFileIsNotFound) {
  EXPECT_EQ(Scan(path(), true).scan.status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace kvindexer::durable
