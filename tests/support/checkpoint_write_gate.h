// CheckpointWriteGate: the real system calls, except that while the gate is
// closed every write to a checkpoint being built (checkpoint-*.ckpt.tmp)
// waits for it to open: a build held in the middle, for as long as a test
// needs, without timing. A test that closes it opens it again as it leaves
// its scope (absl::Cleanup), so that a failed assertion cannot leave a
// build, and whatever waits for it, blocked for good.
#ifndef KVINDEXER_TESTS_SUPPORT_CHECKPOINT_WRITE_GATE_H_
#define KVINDEXER_TESTS_SUPPORT_CHECKPOINT_WRITE_GATE_H_

#include <condition_variable>
#include <cstddef>
#include <mutex>

#include "tests/support/forwarding_file_io.h"

namespace kvindexer::durable {

class CheckpointWriteGate final : public ForwardingFileIo {
 public:
  void Close() {
    const std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }
  void Open() {
    {
      const std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    changed_.notify_all();
  }
  // Whether a checkpoint write is waiting at the closed gate now.
  bool Holding() const {
    const std::lock_guard<std::mutex> lock(mu_);
    return holding_ > 0;
  }

  ssize_t Write(int fd, const void* data, size_t size) override {
    if (FdPathEndsWith(fd, ".ckpt.tmp")) {
      std::unique_lock<std::mutex> lock(mu_);
      if (!open_) {
        ++holding_;
        changed_.wait(lock, [this] { return open_; });
        --holding_;
      }
    }
    return ForwardingFileIo::Write(fd, data, size);
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable changed_;
  bool open_ = true;
  int holding_ = 0;
};

}  // namespace kvindexer::durable

#endif  // KVINDEXER_TESTS_SUPPORT_CHECKPOINT_WRITE_GATE_H_
