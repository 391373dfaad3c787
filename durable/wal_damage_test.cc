#include "durable/wal_damage.h"

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "durable/record_framing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_files.h"
#include "tests/support/test_temp_dir.h"

namespace kvindexer::durable {
namespace wal_damage_test {

using ::testing::HasSubstr;

// `count` framed records of assorted sizes.
std::string Records(int count, char fill) {
  std::string out;
  for (int i = 0; i < count; ++i) {
    AppendRecord(std::string(static_cast<size_t>(1 + (i * 37) % 300), fill),
                 &out);
  }
  return out;
}

std::string RandomBytes(size_t size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(size, '\0');
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

TEST(FindIntactRecordsTest, NothingInEmptyZeroOrShortBytes) {
  for (const std::string& bytes :
       {std::string(), std::string(7, '\0'), std::string(65536, '\0'),
        std::string(100, 'x')}) {
    const IntactRecords found = FindIntactRecords(bytes);
    EXPECT_EQ(found.records, 0u);
    EXPECT_FALSE(found.any());
  }
}

TEST(FindIntactRecordsTest, FindsEveryRecordOfAnIntactRun) {
  const IntactRecords found = FindIntactRecords(Records(20, 'r'));
  EXPECT_EQ(found.records, 20u);
  EXPECT_EQ(found.first_offset, 0u);
  EXPECT_FALSE(found.incomplete);
}

TEST(FindIntactRecordsTest, FindsRecordsBehindGarbageAndBetweenDamage) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const std::string garbage = RandomBytes(4096 + seed * 97, seed);
    const std::string bytes = garbage + Records(3, 'a') +
                              RandomBytes(513, seed + 100) + Records(2, 'b');
    const IntactRecords found = FindIntactRecords(bytes);
    EXPECT_EQ(found.records, 5u);
    EXPECT_EQ(found.first_offset, garbage.size());
    EXPECT_TRUE(found.any());
  }
}

// One record that ends the bytes is enough: a damaged log's last record.
TEST(FindIntactRecordsTest, FindsALastRecordThatEndsTheBytes) {
  const std::string bytes = RandomBytes(1000, 7) + Records(1, 'z');
  EXPECT_EQ(FindIntactRecords(bytes).records, 1u);
}

// A torn tail: the part of a record that was being written, or random
// bytes. Nothing is found, and the search ends without giving up.
TEST(FindIntactRecordsTest, ATornRecordOrRandomBytesHoldNone) {
  const std::string records = Records(4, 'q');
  const size_t last = Records(3, 'q').size();
  for (size_t end = last + 2; end <= records.size(); end += 7) {
    EXPECT_EQ(
        FindIntactRecords(records.substr(last + 1, end - last - 1)).records,
        0u);
  }
  const IntactRecords random = FindIntactRecords(RandomBytes(1 << 20, 3));
  EXPECT_EQ(random.records, 0u);
  EXPECT_FALSE(random.incomplete);
}

TEST(KeepCutBytesTest, WritesTheCopyUnderItsOffsetAndLeavesNoTemporary) {
  TestTempDir dir;
  const std::string log = dir.Sub("wal-0000000000000003.log");
  WriteTestFile(log, "the log");
  absl::StatusOr<std::string> kept =
      KeepCutBytes(log, 1234, "cut bytes", FileIo::Real());
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(*kept, log + ".corrupt-1234");
  EXPECT_EQ(ReadTestFile(*kept), "cut bytes");
  EXPECT_EQ(ReadTestFile(log), "the log");
  EXPECT_FALSE(TestFileExists(*kept + ".tmp"));
  absl::StatusOr<std::string> again =
      KeepCutBytes(log, 1234, "more", FileIo::Real());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, log + ".corrupt-1234.1");
  EXPECT_EQ(ReadTestFile(*kept), "cut bytes");
}

// A symbolic link where the copy would go is not followed.
TEST(KeepCutBytesTest, ALinkInTheWayIsRefused) {
  TestTempDir dir;
  const std::string log = dir.Sub("wal-0000000000000003.log");
  const std::string elsewhere = dir.Sub("elsewhere");
  WriteTestFile(elsewhere, "not ours");
  std::filesystem::create_symlink(elsewhere, log + ".corrupt-9.tmp");
  absl::StatusOr<std::string> kept =
      KeepCutBytes(log, 9, "cut", FileIo::Real());
  EXPECT_EQ(kept.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(kept.status().message(), HasSubstr("symbolic link"));
  EXPECT_EQ(ReadTestFile(elsewhere), "not ours");
}

}  // namespace wal_damage_test
}  // namespace kvindexer::durable
