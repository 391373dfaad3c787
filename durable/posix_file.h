// Small POSIX helpers shared by durable/'s files: complete writes, directory
// syncs, whole-file reads and an owning file descriptor.
#ifndef KVINDEXER_DURABLE_POSIX_FILE_H_
#define KVINDEXER_DURABLE_POSIX_FILE_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "durable/file_io.h"

namespace kvindexer::durable {

// strerror(err), thread-safe.
std::string ErrnoText(int err);

// `dir` + "/" + `name`.
std::string JoinPath(const std::string& dir, std::string_view name);

// The directory part of `path`: "." when it has none, "/" for a file at
// the root.
std::string DirectoryOf(const std::string& path);

// Writes all of `data` to `fd` through `io`, retrying after EINTR and short
// writes. Returns 0, or the errno of the write that failed (EIO for a write
// that made no progress).
int WriteFully(FileIo& io, int fd, std::string_view data);

// fsync of the directory itself, so that a file created, renamed or removed
// in it stays so after a crash. Returns 0 or an errno.
int SyncDirectory(FileIo& io, const std::string& dir);

// Opens the state file `path` of a data directory (a log, a checkpoint, the
// lock, a marker, a kept copy) with `flags` plus O_NOFOLLOW and O_CLOEXEC
// (`mode` applies with O_CREAT), and refuses anything but a regular file,
// so that neither a symbolic link nor a FIFO or device planted under a
// state file's name is followed or blocks the open. Returns the
// descriptor, or -1 with errno set: ELOOP when `path` is a symbolic link,
// EINVAL when it is not a regular file, else open(2)'s.
int OpenStateFile(const std::string& path, int flags, mode_t mode = 0600);

// ErrnoText(err), except for the two refusals of OpenStateFile, which it
// explains: ELOOP and EINVAL.
std::string OpenErrorText(int err);

// Replaces the state file `path` with `bytes` so that a crash leaves the
// old file or the new one: written to `path`.tmp (DataDir::List deletes one
// a crash leaves), fsynced, renamed into place, and the directory fsynced.
// On failure INTERNAL "<step>: <reason>" (step: open, write, fsync, rename
// or sync directory), and no .tmp is left.
absl::Status ReplaceFileDurably(FileIo& io, const std::string& path,
                                std::string_view bytes);

// Reads the whole file `path` into *out, opened with OpenStateFile.
// NOT_FOUND when it does not exist, INTERNAL for other errors (a symbolic
// link among them); both name the path.
absl::Status ReadWholeFile(const std::string& path, std::string* out);

// Owns a file descriptor; closes it on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(other.Release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Reset(int fd = -1);

 private:
  int fd_ = -1;
};

// A state file opened for reading, and its size when it was opened.
struct FileForReading {
  UniqueFd fd;
  uint64_t size = 0;
};

// Opens the state file `path` for reading (OpenStateFile) and reads its
// size. NOT_FOUND when it does not exist, INTERNAL for other errors (a
// symbolic link among them); both name the path.
absl::StatusOr<FileForReading> OpenForReading(const std::string& path);

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_POSIX_FILE_H_
