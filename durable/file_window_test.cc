#include "durable/file_window.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_files.h"
#include "tests/support/test_temp_dir.h"

namespace kvindexer::durable {
namespace file_window_test {

using ::testing::HasSubstr;

// Bytes that differ at every offset, so a window at the wrong place shows.
std::string Pattern(size_t size) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) {
    bytes[i] = static_cast<char>((i * 131 + i / 251) & 0xFF);
  }
  return bytes;
}

class FileWindowTest : public ::testing::Test {
 protected:
  std::string path() const { return dir_.Sub("file"); }
  TestTempDir dir_;
};

TEST_F(FileWindowTest, HoldsWhatIsAskedForAtEveryStepAndPieceSize) {
  const std::string bytes = Pattern(10'000);
  WriteTestFile(path(), bytes);
  for (const size_t piece :
       {size_t{1}, size_t{7}, size_t{512}, size_t{1} << 20}) {
    absl::StatusOr<FileWindow> window = FileWindow::Open(path(), piece);
    ASSERT_TRUE(window.ok()) << window.status();
    EXPECT_EQ(window->size(), bytes.size());
    uint64_t offset = 0;
    size_t want = 1;
    while (offset < bytes.size()) {
      absl::StatusOr<std::string_view> held = window->Hold(offset, want);
      ASSERT_TRUE(held.ok()) << held.status();
      const size_t expected = std::min(want, bytes.size() - offset);
      ASSERT_GE(held->size(), expected) << "piece " << piece;
      ASSERT_EQ(*held, std::string_view(bytes).substr(offset, held->size()))
          << "piece " << piece << " offset " << offset;
      // Steps that stay inside the window, jump past it, and repeat one.
      offset += want % 5 == 0 ? 0 : want;
      want = want * 3 % 997 + 1;
    }
    absl::StatusOr<std::string_view> end = window->Hold(bytes.size(), 8);
    ASSERT_TRUE(end.ok());
    EXPECT_TRUE(end->empty());
  }
}

TEST_F(FileWindowTest, MemoryFollowsThePieceAndTheLargestAskNotTheFile) {
  const std::string bytes = Pattern(1 << 20);
  WriteTestFile(path(), bytes);
  absl::StatusOr<FileWindow> window = FileWindow::Open(path(), 4096);
  ASSERT_TRUE(window.ok()) << window.status();
  for (uint64_t offset = 0; offset < bytes.size(); offset += 100) {
    ASSERT_TRUE(window->Hold(offset, 100).ok());
  }
  EXPECT_LE(window->buffer_bytes(), 4096 * 3 / 2);
  // One ask larger than a piece is held whole.
  absl::StatusOr<FileWindow> again = FileWindow::Open(path(), 4096);
  ASSERT_TRUE(again.ok());
  absl::StatusOr<std::string_view> whole = again->Hold(10, 300'000);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, std::string_view(bytes).substr(10, 300'000));
  EXPECT_LE(again->buffer_bytes(), 300'000 * 3 / 2);
}

TEST_F(FileWindowTest, AFileThatShrankEndsWhereItNowEnds) {
  WriteTestFile(path(), Pattern(5000));
  absl::StatusOr<FileWindow> window = FileWindow::Open(path(), 64);
  ASSERT_TRUE(window.ok());
  ASSERT_TRUE(window->Hold(0, 10).ok());
  ASSERT_EQ(::truncate(path().c_str(), 1000), 0);
  absl::StatusOr<std::string_view> held = window->Hold(900, 500);
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_EQ(*held, std::string_view(Pattern(5000)).substr(900, 100));
  EXPECT_EQ(window->size(), 1000u);
}

TEST_F(FileWindowTest, AnOffsetBehindTheWindowOrPastTheEndIsAnError) {
  WriteTestFile(path(), Pattern(5000));
  absl::StatusOr<FileWindow> window = FileWindow::Open(path(), 64);
  ASSERT_TRUE(window.ok());
  ASSERT_TRUE(window->Hold(1000, 10).ok());
  const absl::StatusOr<std::string_view> behind = window->Hold(999, 1);
  EXPECT_EQ(behind.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(behind.status().message(), HasSubstr(path()));
  const absl::StatusOr<std::string_view> past = window->Hold(5001, 1);
  EXPECT_EQ(past.status().code(), absl::StatusCode::kInternal);
  // Neither moved the window: what it held is still there.
  absl::StatusOr<std::string_view> held = window->Hold(1000, 10);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held->substr(0, 10),
            std::string_view(Pattern(5000)).substr(1000, 10));
}

TEST_F(FileWindowTest, AMissingFileIsNotFoundAndALinkIsRefused) {
  absl::StatusOr<FileWindow> missing = FileWindow::Open(path());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(path()));
  WriteTestFile(dir_.Sub("target"), "x");
  std::filesystem::create_symlink(dir_.Sub("target"), path());
  absl::StatusOr<FileWindow> link = FileWindow::Open(path());
  EXPECT_EQ(link.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(link.status().message(), HasSubstr(path()));
}

}  // namespace file_window_test
}  // namespace kvindexer::durable
