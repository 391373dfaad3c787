// Building blocks for FileIo test doubles: ForwardingFileIo makes the real
// system calls, so that a double overrides only the calls it faults or
// holds, and FdPath names the file behind a descriptor, so that it can pick
// the files it acts on.
#ifndef KVINDEXER_TESTS_SUPPORT_FORWARDING_FILE_IO_H_
#define KVINDEXER_TESTS_SUPPORT_FORWARDING_FILE_IO_H_

#include <sys/types.h>
#include <unistd.h>

#include <climits>
#include <cstddef>
#include <string>
#include <string_view>

#include "durable/file_io.h"

namespace kvindexer::durable {

class ForwardingFileIo : public FileIo {
 public:
  ssize_t Write(int fd, const void* data, size_t size) override {
    return FileIo::Real().Write(fd, data, size);
  }
  int Fdatasync(int fd) override { return FileIo::Real().Fdatasync(fd); }
  int Fsync(int fd) override { return FileIo::Real().Fsync(fd); }
  int Ftruncate(int fd, off_t length) override {
    return FileIo::Real().Ftruncate(fd, length);
  }
  ssize_t Pread(int fd, void* data, size_t size, off_t offset) override {
    return FileIo::Real().Pread(fd, data, size, offset);
  }
};

// The path `fd` was opened with, read from /proc/self/fd; empty when it
// cannot be read. A deleted file's path ends in " (deleted)".
inline std::string FdPath(int fd) {
  char target[PATH_MAX];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), target, sizeof(target));
  return n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string();
}

// Whether `fd` names a file whose path ends with `suffix` (never for an
// empty suffix).
inline bool FdPathEndsWith(int fd, std::string_view suffix) {
  return !suffix.empty() && FdPath(fd).ends_with(suffix);
}

}  // namespace kvindexer::durable

#endif  // KVINDEXER_TESTS_SUPPORT_FORWARDING_FILE_IO_H_
