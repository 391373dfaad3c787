// An LD_PRELOAD library for the end-to-end test of a failed state log
// (durability_sync_failure_test.cc): while the file named by
// KVINDEXER_TEST_FSYNC_FAULT_TRIGGER exists, fdatasync(2) and fsync(2)
// fail with EIO, as they do after a failed writeback; otherwise, and when
// the variable is unset or empty, they are the real system calls. The test
// turns the fault on from outside by creating the file, so the server
// process meets the error through its ordinary system calls.
//
// Test-only. Nothing is lost: the pages the kernel holds are still written
// back, so what the server wrote before the fault stays in its files.
#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace {

// Read once: the environment of the process does not change it later.
const char* TriggerPath() {
  static const char* const path =
      ::getenv("KVINDEXER_TEST_FSYNC_FAULT_TRIGGER");
  return path;
}

bool Failing() {
  const char* path = TriggerPath();
  if (path == nullptr || path[0] == '\0') return false;
  const int saved = errno;  // access(2) of an absent file sets it
  const bool exists = ::access(path, F_OK) == 0;
  errno = saved;
  return exists;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int fdatasync(int fd) {
  if (Failing()) {
    errno = EIO;
    return -1;
  }
  return static_cast<int>(::syscall(SYS_fdatasync, fd));
}

__attribute__((visibility("default"))) int fsync(int fd) {
  if (Failing()) {
    errno = EIO;
    return -1;
  }
  return static_cast<int>(::syscall(SYS_fsync, fd));
}

}  // extern "C"
