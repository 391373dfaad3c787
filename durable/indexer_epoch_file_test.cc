// durable/indexer_epoch_file.h: the file's form, its damage and its writes.
#include "durable/indexer_epoch_file.h"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/support/forwarding_file_io.h"
#include "tests/support/test_log_capture.h"
#include "tests/support/test_temp_dir.h"

namespace kvindexer::durable {
namespace {

namespace fs = std::filesystem;
constexpr char kEpoch[] = "0a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c3d";

class EpochFileTest : public ::testing::Test {
 protected:
  std::string FilePath() const {
    return (fs::path(dir_.path()) / kEpochFileName).string();
  }
  void WriteText(const std::string& text) const {
    std::ofstream(FilePath(), std::ios::binary | std::ios::trunc) << text;
  }
  std::string ReadText() const {
    std::ifstream in(FilePath(), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  TestTempDir dir_;
};

TEST_F(EpochFileTest, WrittenFileReadsBackAndLeavesNoTemporary) {
  ASSERT_TRUE(
      WriteEpochFile(dir_.path(), {kEpoch, "b00t-id"}, FileIo::Real()).ok());
  EXPECT_EQ(ReadText(), std::string("epoch ") + kEpoch + "\nboot_id b00t-id\n");
  const std::optional<EpochFile> read = ReadEpochFile(dir_.path());
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->epoch, kEpoch);
  EXPECT_EQ(read->boot_id, "b00t-id");
  EXPECT_FALSE(fs::exists(FilePath() + ".tmp"));
  // An unknown boot id is written empty and read back so.
  ASSERT_TRUE(WriteEpochFile(dir_.path(), {kEpoch, ""}, FileIo::Real()).ok());
  ASSERT_TRUE(ReadEpochFile(dir_.path()).has_value());
  EXPECT_EQ(ReadEpochFile(dir_.path())->boot_id, "");
}

TEST_F(EpochFileTest, AMissingFileIsNoEpochWithoutAWarning) {
  TestLogCapture log;
  EXPECT_FALSE(ReadEpochFile(dir_.path()).has_value());
  EXPECT_TRUE(log.Lines(spdlog::level::warn).empty());
}

TEST_F(EpochFileTest, AMalformedFileIsNoEpochAndIsNamedAtWarn) {
  const std::string good = std::string("epoch ") + kEpoch + "\n";
  const std::string cases[] = {
      "",
      good,                         // one line
      good + "boot_id x",           // no final newline
      good + "boot_id x\nextra\n",  // three lines
      good + "boot x\n",            // wrong key
      "epoch 0A1B2C3D-4E5F-4A6B-8C7D-8E9F0A1B2C3D\nboot_id x\n",  // upper
      "epoch not-a-uuid\nboot_id x\n",
      good + "boot_id has space\n",
      good + "boot_id " + std::string(65, 'b') + "\n",
  };
  for (const std::string& text : cases) {
    SCOPED_TRACE(text);
    WriteText(text);
    TestLogCapture log;
    EXPECT_FALSE(ReadEpochFile(dir_.path()).has_value());
    ASSERT_EQ(log.Lines(spdlog::level::warn).size(), 1u);
    EXPECT_NE(log.Lines(spdlog::level::warn)[0].find(FilePath()),
              std::string::npos);
  }
}

// Writes fail with ENOSPC.
class FullDiskIo final : public ForwardingFileIo {
 public:
  ssize_t Write(int, const void*, size_t) override {
    errno = ENOSPC;
    return -1;
  }
};

TEST_F(EpochFileTest, AFailedWriteKeepsTheOldFileAndNamesThePath) {
  ASSERT_TRUE(
      WriteEpochFile(dir_.path(), {kEpoch, "old"}, FileIo::Real()).ok());
  FullDiskIo full;
  const absl::Status s = WriteEpochFile(
      dir_.path(), {"ffffffff-ffff-4fff-8fff-ffffffffffff", "new"}, full);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.message().find(FilePath()), std::string::npos) << s;
  EXPECT_NE(s.message().find("write"), std::string::npos) << s;
  ASSERT_TRUE(ReadEpochFile(dir_.path()).has_value());
  EXPECT_EQ(ReadEpochFile(dir_.path())->boot_id, "old");
  EXPECT_FALSE(fs::exists(FilePath() + ".tmp"));
}

TEST_F(EpochFileTest, BootIdIsTheFirstLineTrimmed) {
  const std::string path = (fs::path(dir_.path()) / "boot_id").string();
  std::ofstream(path) << "  5d3f-aa \nsecond\n";
  EXPECT_EQ(ReadBootId(path), "5d3f-aa");
  EXPECT_EQ(ReadBootId(path + ".missing"), "");
  // The kernel's, on Linux, is a UUID.
  EXPECT_EQ(ReadBootId().size(), 36u);
}

}  // namespace
}  // namespace kvindexer::durable
