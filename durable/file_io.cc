#include "durable/file_io.h"

#include <unistd.h>

namespace kvindexer::durable {
namespace {

// Plain pass-through: retrying on EINTR and short writes is the caller's
// job, so that a fake can reproduce exactly what the kernel may do.
class RealFileIo final : public FileIo {
 public:
  ssize_t Write(int fd, const void* data, size_t size) override {
    return ::write(fd, data, size);
  }
  int Fdatasync(int fd) override { return ::fdatasync(fd); }
  int Fsync(int fd) override { return ::fsync(fd); }
  int Ftruncate(int fd, off_t length) override {
    return ::ftruncate(fd, length);
  }
  ssize_t Pread(int fd, void* data, size_t size, off_t offset) override {
    return ::pread(fd, data, size, offset);
  }
};

}  // namespace

FileIo& FileIo::Real() {
  static RealFileIo* const real = new RealFileIo();
  return *real;
}

}  // namespace kvindexer::durable
