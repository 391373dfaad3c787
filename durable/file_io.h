// FileIo: the few system calls through which durable/ writes its files and
// reads them back at start-up, so that tests can inject failures (a full
// disk, an I/O error) at any of them.
#ifndef KVINDEXER_DURABLE_FILE_IO_H_
#define KVINDEXER_DURABLE_FILE_IO_H_

#include <sys/types.h>

#include <cstddef>

namespace kvindexer::durable {

class FileIo {
 public:
  virtual ~FileIo() = default;
  // As write(2), fdatasync(2), fsync(2) and ftruncate(2): -1 with errno set
  // on failure.
  virtual ssize_t Write(int fd, const void* data, size_t size) = 0;
  virtual int Fdatasync(int fd) = 0;
  virtual int Fsync(int fd) = 0;
  virtual int Ftruncate(int fd, off_t length) = 0;
  // As pread(2): the bytes read (0 at the end of the file), or -1 with
  // errno set.
  virtual ssize_t Pread(int fd, void* data, size_t size, off_t offset) = 0;

  // The real system calls.
  static FileIo& Real();
};

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_FILE_IO_H_
