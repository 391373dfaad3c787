#include "durable/data_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_files.h"
#include "tests/support/test_log_capture.h"
#include "tests/support/test_temp_dir.h"

namespace kvindexer::durable {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(DataDirFileNamesTest, AreZeroPaddedToSixteenDigits) {
  EXPECT_EQ(WalFileName(7), "wal-0000000000000007.log");
  EXPECT_EQ(CheckpointFileName(1234567890123456),
            "checkpoint-1234567890123456.ckpt");
}

class DataDirTest : public ::testing::Test {
 protected:
  TestTempDir tmp_;
};

TEST_F(DataDirTest, CreatesMissingDirectoriesPrivately) {
  const std::string path = tmp_.Sub("a/b/data");
  const absl::StatusOr<std::unique_ptr<DataDir>> dir = DataDir::Open(path);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ((*dir)->path(), path);
  for (const std::string& created : {tmp_.Sub("a"), tmp_.Sub("a/b"), path}) {
    struct stat st;
    ASSERT_EQ(::stat(created.c_str(), &st), 0) << created;
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    // 0700 unless the umask takes owner bits away, which nobody does.
    EXPECT_EQ(st.st_mode & 0077, 0u) << created;
  }
  EXPECT_EQ((*dir)->WalPath(3), path + "/wal-0000000000000003.log");
  EXPECT_EQ((*dir)->CheckpointPath(3),
            path + "/checkpoint-0000000000000003.ckpt");
}

TEST_F(DataDirTest, WritesOurPidIntoTheLockFile) {
  const auto dir = DataDir::Open(tmp_.path());
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(ReadTestFile(tmp_.Sub("LOCK")), std::to_string(::getpid()) + "\n");
}

// flock belongs to the open file description, so a second Open in this
// process is refused just as another process would be.
TEST_F(DataDirTest, ASecondOpenFailsNamingTheHolder) {
  auto first = DataDir::Open(tmp_.path());
  ASSERT_TRUE(first.ok()) << first.status();
  const absl::Status second = DataDir::Open(tmp_.path()).status();
  EXPECT_EQ(second.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(second.message(), "data directory " + tmp_.path() +
                                  " is in use by process " +
                                  std::to_string(::getpid()));
  // The refused Open leaves the holder's PID in place.
  EXPECT_EQ(ReadTestFile(tmp_.Sub("LOCK")), std::to_string(::getpid()) + "\n");

  first->reset();
  EXPECT_TRUE(DataDir::Open(tmp_.path()).ok());
}

TEST_F(DataDirTest, APathUnderARegularFileIsAnErrorNamingIt) {
  WriteTestFile(tmp_.Sub("file"), "not a directory");
  const std::string path = tmp_.Sub("file/data");
  const absl::Status status = DataDir::Open(path).status();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(path));

  const absl::Status itself = DataDir::Open(tmp_.Sub("file")).status();
  EXPECT_FALSE(itself.ok());
  EXPECT_THAT(itself.message(), HasSubstr(tmp_.Sub("file")));
  EXPECT_THAT(itself.message(), HasSubstr("not a directory"));
}

TEST_F(DataDirTest, AReadOnlyDirectoryIsPermissionDenied) {
  if (::geteuid() == 0) {
    GTEST_SKIP() << "root may write to any directory regardless of its mode";
  }
  const std::string parent = tmp_.Sub("readonly");
  ASSERT_EQ(::mkdir(parent.c_str(), 0500), 0);
  const std::string below = parent + "/data";
  const absl::Status cannot_create = DataDir::Open(below).status();
  EXPECT_EQ(cannot_create.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(cannot_create.message(), HasSubstr(below));

  const absl::Status not_writable = DataDir::Open(parent).status();
  EXPECT_EQ(not_writable.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(not_writable.message(), HasSubstr(parent));
}

// docs/security.md, "The data directory": only the server's user may write
// it, as ssh demands of ~/.ssh.
TEST_F(DataDirTest, ADirectoryOthersCanWriteIsRefused) {
  const std::string path = tmp_.Sub("data");
  ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
  const struct {
    mode_t mode;
    const char* who;
  } refused[] = {{0770, "its group"},
                 {0720, "its group"},
                 {0707, "others"},
                 {0777, "its group and by others"},
                 {01777, "its group and by others"}};
  for (const auto& [mode, who] : refused) {
    SCOPED_TRACE(mode);
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
    const absl::Status status = DataDir::Open(path).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    char octal[8];
    std::snprintf(octal, sizeof(octal), "%04o", mode);
    EXPECT_THAT(status.message(),
                AllOf(HasSubstr("data directory " + path + " has mode " +
                                octal + ": it is writable by " + who),
                      HasSubstr("chmod go-w " + path)));
    EXPECT_FALSE(TestFileExists(path + "/LOCK")) << "nothing is created";
  }
  for (const mode_t mode : {0700, 0750, 0755, 0711}) {
    SCOPED_TRACE(mode);
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
    EXPECT_TRUE(DataDir::Open(path).ok());
  }
}

TEST_F(DataDirTest, ADirectoryOfAnotherUserIsRefused) {
  std::string path = "/";  // root's, and not writable by anyone else
  const uid_t other = ::geteuid() == 0 ? 65534 : 0;
  if (::geteuid() == 0) {
    path = tmp_.Sub("theirs");
    ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
    ASSERT_EQ(::chown(path.c_str(), other, static_cast<gid_t>(-1)), 0);
  }
  const absl::Status status = DataDir::Open(path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(),
              HasSubstr("data directory " + path + " belongs to uid " +
                        std::to_string(other) + ", not to uid " +
                        std::to_string(::geteuid()) + " that runs the server"));
}

// The directory itself may be reached through a link (a mount point
// elsewhere, say); its own mode and owner are what is checked.
TEST_F(DataDirTest, ALinkToTheDirectoryIsFollowed) {
  const std::string real = tmp_.Sub("real");
  ASSERT_EQ(::mkdir(real.c_str(), 0700), 0);
  const std::string link = tmp_.Sub("link");
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  ASSERT_TRUE(DataDir::Open(link).ok());
  ASSERT_EQ(::chmod(real.c_str(), 0777), 0);
  EXPECT_EQ(DataDir::Open(link).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// A state file is never a link: LOCK planted as one is refused, and what
// it points to is left alone.
TEST_F(DataDirTest, ALinkPlantedAsTheLockFileIsRefused) {
  const std::string target = tmp_.Sub("elsewhere");
  WriteTestFile(target, "precious");
  const std::string path = tmp_.Sub("data");
  ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(target.c_str(), (path + "/LOCK").c_str()), 0);
  const absl::Status status = DataDir::Open(path).status();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr(path + "/LOCK"), HasSubstr("symbolic link")));
  EXPECT_EQ(ReadTestFile(target), "precious");
}

TEST_F(DataDirTest, AnEmptyPathIsRefused) {
  EXPECT_EQ(DataDir::Open("").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(DataDirTest, ListsGenerationsAndDeletesTemporaryFiles) {
  auto dir = DataDir::Open(tmp_.path());
  ASSERT_TRUE(dir.ok());
  for (const char* name :
       {"wal-0000000000000003.log", "wal-0000000000000001.log",
        "checkpoint-0000000000000002.ckpt",
        "checkpoint-0000000000000001.ckpt.corrupt", "wal-1.log",
        "wal-000000000000000x.log", "checkpoint-0000000000000009.ckpt.tmp",
        "notes.txt", "wal-0000000000000004.log.tmp"}) {
    WriteTestFile(tmp_.Sub(name), "x");
  }
  const TestLogCapture capture;
  const absl::StatusOr<DataDir::Listing> listing = (*dir)->List();
  ASSERT_TRUE(listing.ok()) << listing.status();
  EXPECT_THAT(listing->wals, ElementsAre(1, 3));
  EXPECT_THAT(listing->checkpoints, ElementsAre(2));
  EXPECT_FALSE(
      TestFileExists(tmp_.Sub("checkpoint-0000000000000009.ckpt.tmp")));
  EXPECT_FALSE(TestFileExists(tmp_.Sub("wal-0000000000000004.log.tmp")));
  EXPECT_TRUE(
      TestFileExists(tmp_.Sub("checkpoint-0000000000000001.ckpt.corrupt")));
  EXPECT_TRUE(TestFileExists(tmp_.Sub("notes.txt")));
  EXPECT_TRUE(TestFileExists(tmp_.Sub("LOCK")));
  const auto infos = capture.Lines(spdlog::level::info);
  EXPECT_EQ(infos.size(), 2u);
  for (const std::string& line : infos) {
    EXPECT_THAT(line, HasSubstr("deleted temporary file"));
  }
}

TEST_F(DataDirTest, AnEmptyDirectoryListsNothing) {
  auto dir = DataDir::Open(tmp_.path());
  ASSERT_TRUE(dir.ok());
  const auto listing = (*dir)->List();
  ASSERT_TRUE(listing.ok());
  EXPECT_THAT(listing->wals, IsEmpty());
  EXPECT_THAT(listing->checkpoints, IsEmpty());
}

TEST_F(DataDirTest, MarkCorruptRenamesAndRemoveDeletes) {
  auto dir = DataDir::Open(tmp_.path());
  ASSERT_TRUE(dir.ok());
  const std::string checkpoint = (*dir)->CheckpointPath(5);
  WriteTestFile(checkpoint, "damaged");
  ASSERT_TRUE((*dir)->MarkCorrupt(checkpoint).ok());
  EXPECT_FALSE(TestFileExists(checkpoint));
  EXPECT_EQ(ReadTestFile(checkpoint + ".corrupt"), "damaged");
  const auto listing = (*dir)->List();
  ASSERT_TRUE(listing.ok());
  EXPECT_THAT(listing->checkpoints, IsEmpty());

  const absl::Status missing = (*dir)->MarkCorrupt(checkpoint);
  EXPECT_FALSE(missing.ok());
  EXPECT_THAT(missing.message(), HasSubstr(checkpoint));

  const std::string wal = (*dir)->WalPath(5);
  WriteTestFile(wal, "log");
  EXPECT_TRUE((*dir)->Remove(wal).ok());
  EXPECT_FALSE(TestFileExists(wal));
  EXPECT_TRUE((*dir)->Remove(wal).ok());
  EXPECT_TRUE((*dir)->SyncDir().ok());
}

// Setting aside the same file name twice keeps both: each is evidence.
TEST_F(DataDirTest, MarkCorruptNeverOverwritesAnEarlierOne) {
  auto dir = DataDir::Open(tmp_.path());
  ASSERT_TRUE(dir.ok());
  const std::string wal = (*dir)->WalPath(7);
  WriteTestFile(wal, "first");
  ASSERT_TRUE((*dir)->MarkCorrupt(wal).ok());
  WriteTestFile(wal, "second");
  ASSERT_TRUE((*dir)->MarkCorrupt(wal).ok());
  WriteTestFile(wal, "third");
  ASSERT_TRUE((*dir)->MarkCorrupt(wal).ok());
  EXPECT_EQ(ReadTestFile(wal + ".corrupt"), "first");
  EXPECT_EQ(ReadTestFile(wal + ".corrupt.1"), "second");
  EXPECT_EQ(ReadTestFile(wal + ".corrupt.2"), "third");
  const auto listing = (*dir)->List();
  ASSERT_TRUE(listing.ok());
  EXPECT_THAT(listing->wals, IsEmpty());
}

}  // namespace
}  // namespace kvindexer::durable
