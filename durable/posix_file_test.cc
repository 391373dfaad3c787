// OpenStateFile: every state file of a data directory is a regular file
// opened without following links (docs/security.md, "The data directory").
#include "durable/posix_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_files.h"
#include "tests/support/test_temp_dir.h"

namespace kvindexer::durable {
namespace posix_file_test {

using ::testing::HasSubstr;

TEST(OpenStateFileTest, OpensARegularFileCloseOnExecAndBlocking) {
  TestTempDir dir;
  const std::string path = dir.Sub("wal-0000000000000001.log");
  const UniqueFd fd(OpenStateFile(path, O_RDWR | O_CREAT));
  ASSERT_TRUE(fd.valid()) << ErrnoText(errno);
  struct stat st;
  ASSERT_EQ(::fstat(fd.get(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_NE(::fcntl(fd.get(), F_GETFD) & FD_CLOEXEC, 0);
  EXPECT_EQ(::fcntl(fd.get(), F_GETFL) & O_NONBLOCK, 0);
  ASSERT_EQ(::write(fd.get(), "x", 1), 1);
  EXPECT_EQ(ReadTestFile(path), "x");
}

TEST(OpenStateFileTest, RefusesASymbolicLinkAndLeavesItsTargetAlone) {
  TestTempDir dir;
  const std::string target = dir.Sub("target");
  WriteTestFile(target, "precious");
  const std::string link = dir.Sub("checkpoint-0000000000000001.ckpt");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  for (const int flags : {O_RDONLY, O_WRONLY | O_TRUNC, O_RDWR | O_CREAT}) {
    errno = 0;
    EXPECT_EQ(OpenStateFile(link, flags), -1);
    EXPECT_EQ(errno, ELOOP);
  }
  EXPECT_EQ(ReadTestFile(target), "precious");
  // A dangling link is refused too, rather than created through.
  const std::string dangling = dir.Sub("LOCK");
  ASSERT_EQ(::symlink(dir.Sub("nowhere").c_str(), dangling.c_str()), 0);
  EXPECT_EQ(OpenStateFile(dangling, O_RDWR | O_CREAT), -1);
  EXPECT_EQ(errno, ELOOP);
  EXPECT_FALSE(TestFileExists(dir.Sub("nowhere")));
  EXPECT_THAT(OpenErrorText(ELOOP), HasSubstr("symbolic link"));
}

// A FIFO under a state file's name must not block the open (a reader of
// a FIFO waits for a writer), and neither it nor a directory is a file.
TEST(OpenStateFileTest, RefusesAFifoWithoutBlockingAndADirectory) {
  TestTempDir dir;
  const std::string fifo = dir.Sub("wal-0000000000000002.log");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(OpenStateFile(fifo, O_RDONLY), -1);
  EXPECT_EQ(errno, EINVAL);
  const std::string sub = dir.Sub("sub");
  ASSERT_EQ(::mkdir(sub.c_str(), 0700), 0);
  EXPECT_EQ(OpenStateFile(sub, O_RDONLY), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(OpenErrorText(EINVAL), "it is not a regular file");
}

TEST(OpenStateFileTest, ReadWholeFileRefusesALink) {
  TestTempDir dir;
  WriteTestFile(dir.Sub("target"), "bytes");
  const std::string link = dir.Sub("link");
  ASSERT_EQ(::symlink(dir.Sub("target").c_str(), link.c_str()), 0);
  std::string out;
  const absl::Status read = ReadWholeFile(link, &out);
  EXPECT_EQ(read.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(read.message(), HasSubstr(link));
  EXPECT_THAT(read.message(), HasSubstr("symbolic link"));
}

}  // namespace posix_file_test
}  // namespace kvindexer::durable
