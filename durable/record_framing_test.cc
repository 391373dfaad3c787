#include "durable/record_framing.h"

#include <string>

#include "durable/crc32c.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer::durable {
namespace {

using ::testing::HasSubstr;

// A header as a newer binary might write it: same layout, higher version,
// a valid CRC.
std::string HeaderWithVersion(FileKind kind, uint32_t version) {
  std::string header = EncodeFileHeader(kind, 3);
  for (int i = 0; i < 4; ++i) {
    header[8 + i] = static_cast<char>((version >> (8 * i)) & 0xFFu);
  }
  const uint32_t crc = Crc32c(header.substr(0, 24));
  for (int i = 0; i < 4; ++i) {
    header[24 + i] = static_cast<char>((crc >> (8 * i)) & 0xFFu);
  }
  return header;
}

TEST(FileHeaderTest, LayoutIsLittleEndianWithItsOwnCrc) {
  const std::string header =
      EncodeFileHeader(FileKind::kWal, 0x0102030405060708ull);
  ASSERT_EQ(header.size(), kFileHeaderBytes);
  EXPECT_EQ(header.substr(0, 8), "KVIXWAL1");
  EXPECT_EQ(header.substr(8, 4), std::string("\x03\0\0\0", 4));
  EXPECT_EQ(header.substr(12, 4), std::string(4, '\0'));
  EXPECT_EQ(header.substr(16, 8), "\x08\x07\x06\x05\x04\x03\x02\x01");
  const uint32_t crc = Crc32c(header.substr(0, 24));
  EXPECT_EQ(static_cast<unsigned char>(header[24]), crc & 0xFFu);
  EXPECT_EQ(static_cast<unsigned char>(header[27]), crc >> 24);
  EXPECT_EQ(EncodeFileHeader(FileKind::kCheckpoint, 1).substr(0, 8),
            "KVIXCKP1");
}

TEST(FileHeaderTest, RoundTrips) {
  for (const FileKind kind : {FileKind::kWal, FileKind::kCheckpoint}) {
    const absl::StatusOr<FileHeader> header =
        DecodeFileHeader(EncodeFileHeader(kind, 42) + "records", kind);
    ASSERT_TRUE(header.ok()) << header.status();
    EXPECT_EQ(header->kind, kind);
    EXPECT_EQ(header->version, kFormatVersion);
    EXPECT_EQ(header->generation, 42u);
  }
}

TEST(FileHeaderTest, ShortForeignOrCorruptIsDataLoss) {
  const std::string header = EncodeFileHeader(FileKind::kWal, 9);
  for (size_t cut = 0; cut < header.size(); ++cut) {
    EXPECT_EQ(
        DecodeFileHeader(header.substr(0, cut), FileKind::kWal).status().code(),
        absl::StatusCode::kDataLoss)
        << "cut at " << cut;
  }
  EXPECT_THAT(
      DecodeFileHeader(header, FileKind::kCheckpoint).status().message(),
      HasSubstr("not a checkpoint file"));
  // Every bit outside the version field, and the two that lower version 3:
  // the CRC or the magic catches it. (The others raise the version: a newer
  // format, refused as such.)
  static_assert(kFormatVersion == 3);
  for (size_t bit = 0; bit < header.size() * 8; ++bit) {
    if (bit / 8 >= 8 && bit / 8 < 12 && bit != 64 && bit != 65) continue;
    std::string flipped = header;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    EXPECT_EQ(DecodeFileHeader(flipped, FileKind::kWal).status().code(),
              absl::StatusCode::kDataLoss)
        << "bit " << bit;
  }
}

TEST(FileHeaderTest, NewerVersionIsRefusedNamingBothVersions) {
  for (const FileKind kind : {FileKind::kWal, FileKind::kCheckpoint}) {
    const absl::Status status =
        DecodeFileHeader(HeaderWithVersion(kind, kFormatVersion + 1), kind)
            .status();
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(status.message(), HasSubstr("format version 4"));
    EXPECT_THAT(status.message(), HasSubstr("version 3 this binary"));
  }
  // Even with a CRC a newer binary may compute differently.
  std::string header = HeaderWithVersion(FileKind::kWal, 7);
  header[24] = static_cast<char>(header[24] ^ 1);
  EXPECT_EQ(DecodeFileHeader(header, FileKind::kWal).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(RecordTest, LayoutAndRoundTrip) {
  std::string bytes;
  AppendRecord("hello", &bytes);
  AppendRecord(std::string(300, 'x'), &bytes);
  ASSERT_EQ(bytes.size(), 8u + 5u + 8u + 300u);
  EXPECT_EQ(bytes.substr(0, 4), std::string("\x05\0\0\0", 4));
  const uint32_t crc = Crc32c("hello");
  EXPECT_EQ(static_cast<unsigned char>(bytes[4]), crc & 0xFFu);

  RecordRead first = ReadRecord(bytes);
  ASSERT_EQ(first.outcome, RecordRead::Outcome::kOk);
  EXPECT_EQ(first.payload, "hello");
  EXPECT_EQ(first.size, 13u);
  RecordRead second = ReadRecord(std::string_view(bytes).substr(first.size));
  ASSERT_EQ(second.outcome, RecordRead::Outcome::kOk);
  EXPECT_EQ(second.payload, std::string(300, 'x'));
  EXPECT_EQ(ReadRecord(std::string_view(bytes).substr(bytes.size())).outcome,
            RecordRead::Outcome::kEnd);
}

TEST(RecordTest, EveryCutIsIncomplete) {
  std::string bytes;
  AppendRecord("payload", &bytes);
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    EXPECT_EQ(ReadRecord(std::string_view(bytes).substr(0, cut)).outcome,
              RecordRead::Outcome::kIncomplete)
        << "cut at " << cut;
  }
}

TEST(RecordTest, ImpossibleLengths) {
  std::string huge("\xFF\xFF\xFF\x7F\0\0\0\0", 8);
  EXPECT_EQ(ReadRecord(huge).outcome, RecordRead::Outcome::kBadLength);
  // Zeros (a file extended but not written) are not empty records.
  EXPECT_EQ(ReadRecord(std::string(64, '\0')).outcome,
            RecordRead::Outcome::kBadLength);
}

TEST(RecordTest, EveryFlippedBitIsCaught) {
  std::string bytes;
  AppendRecord("some payload bytes", &bytes);
  for (size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    std::string flipped = bytes;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    const RecordRead read = ReadRecord(flipped);
    EXPECT_NE(read.outcome, RecordRead::Outcome::kOk) << "bit " << bit;
    EXPECT_NE(read.outcome, RecordRead::Outcome::kEnd) << "bit " << bit;
  }
}

TEST(CheckpointTrailerTest, RoundTripsAndRejectsLookalikes) {
  const std::string trailer = EncodeCheckpointTrailer(0x1234);
  EXPECT_EQ(trailer.size(), 16u);
  EXPECT_EQ(trailer.substr(0, 8), "KVIXEND1");
  EXPECT_EQ(DecodeCheckpointTrailer(trailer), 0x1234u);
  EXPECT_EQ(DecodeCheckpointTrailer(trailer.substr(0, 15)), std::nullopt);
  EXPECT_EQ(DecodeCheckpointTrailer(trailer + "x"), std::nullopt);
  EXPECT_EQ(DecodeCheckpointTrailer("KVIXEND2" + trailer.substr(8)),
            std::nullopt);
}

}  // namespace
}  // namespace kvindexer::durable
