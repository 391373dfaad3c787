// TestFileIo: the real system calls with injectable faults (failed or short
// writes, EINTR, failed syncs and truncations) and a latch that holds every
// fdatasync until the test lets it through, to show group commit without
// timing.
#ifndef KVINDEXER_TESTS_SUPPORT_TEST_FILE_IO_H_
#define KVINDEXER_TESTS_SUPPORT_TEST_FILE_IO_H_

#include <cerrno>
#include <condition_variable>
#include <cstddef>
#include <mutex>

#include "tests/support/forwarding_file_io.h"

namespace kvindexer::durable {

class TestFileIo final : public ForwardingFileIo {
 public:
  // Faults. Each errno is 0 for none.
  void FailWritesAfter(size_t bytes, int err) {
    const std::lock_guard<std::mutex> lock(mu_);
    write_budget_ = bytes;
    write_errno_ = err;
  }
  void HealWrites() {
    const std::lock_guard<std::mutex> lock(mu_);
    write_errno_ = 0;
  }
  // Every write takes at most `bytes` bytes (0: no limit).
  void LimitWrites(size_t bytes) {
    const std::lock_guard<std::mutex> lock(mu_);
    write_limit_ = bytes;
  }
  // The next `count` writes fail with EINTR before writing anything.
  void InterruptWrites(int count) {
    const std::lock_guard<std::mutex> lock(mu_);
    interrupts_ = count;
  }
  void FailSyncs(int err) {
    const std::lock_guard<std::mutex> lock(mu_);
    sync_errno_ = err;
  }
  void FailTruncates(int err) {
    const std::lock_guard<std::mutex> lock(mu_);
    truncate_errno_ = err;
  }

  // The latch: while closed, each fdatasync waits for a permit.
  void CloseSyncLatch() {
    const std::lock_guard<std::mutex> lock(mu_);
    latch_closed_ = true;
  }
  void AllowOneSync() {
    const std::lock_guard<std::mutex> lock(mu_);
    ++permits_;
    changed_.notify_all();
  }
  void OpenSyncLatch() {
    const std::lock_guard<std::mutex> lock(mu_);
    latch_closed_ = false;
    changed_.notify_all();
  }
  // Blocks until `count` fdatasync calls have started.
  void AwaitSyncsStarted(int count) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return syncs_started_ >= count; });
  }

  int fdatasyncs() const {
    const std::lock_guard<std::mutex> lock(mu_);
    return syncs_started_;
  }
  int fsyncs() const {
    const std::lock_guard<std::mutex> lock(mu_);
    return fsyncs_;
  }

  ssize_t Write(int fd, const void* data, size_t size) override {
    {
      const std::lock_guard<std::mutex> lock(mu_);
      if (interrupts_ > 0) {
        --interrupts_;
        errno = EINTR;
        return -1;
      }
      if (write_limit_ != 0 && size > write_limit_) size = write_limit_;
      if (write_errno_ != 0) {
        if (write_budget_ == 0) {
          errno = write_errno_;
          return -1;
        }
        if (size > write_budget_) size = write_budget_;
        write_budget_ -= size;
      }
    }
    return ForwardingFileIo::Write(fd, data, size);
  }

  int Fdatasync(int fd) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++syncs_started_;
      changed_.notify_all();
      changed_.wait(lock, [this] { return !latch_closed_ || permits_ > 0; });
      if (latch_closed_) --permits_;
      if (sync_errno_ != 0) {
        errno = sync_errno_;
        return -1;
      }
    }
    return ForwardingFileIo::Fdatasync(fd);
  }

  int Fsync(int fd) override {
    {
      const std::lock_guard<std::mutex> lock(mu_);
      ++fsyncs_;
      if (sync_errno_ != 0) {
        errno = sync_errno_;
        return -1;
      }
    }
    return ForwardingFileIo::Fsync(fd);
  }

  int Ftruncate(int fd, off_t length) override {
    {
      const std::lock_guard<std::mutex> lock(mu_);
      if (truncate_errno_ != 0) {
        errno = truncate_errno_;
        return -1;
      }
    }
    return ForwardingFileIo::Ftruncate(fd, length);
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable changed_;
  size_t write_budget_ = 0;
  int write_errno_ = 0;
  size_t write_limit_ = 0;
  int interrupts_ = 0;
  int sync_errno_ = 0;
  int truncate_errno_ = 0;
  bool latch_closed_ = false;
  int permits_ = 0;
  int syncs_started_ = 0;
  int fsyncs_ = 0;
};

}  // namespace kvindexer::durable

#endif  // KVINDEXER_TESTS_SUPPORT_TEST_FILE_IO_H_
