// ParkingVisitor: a BlockVisitor that stops in its first OnBlock until the
// test releases it, so that a test can keep a scan (and whatever the backend
// holds during one) in progress for as long as it needs. Test-only; shared by
// the backend unit tests and the conformance suite.
#ifndef KVINDEXER_TESTS_SUPPORT_PARKING_VISITOR_H_
#define KVINDEXER_TESTS_SUPPORT_PARKING_VISITOR_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "kvindexer/backend.h"

namespace kvindexer::test_support {

class ParkingVisitor final : public BlockVisitor {
 public:
  // A parked OnBlock gives up waiting after this long, so that a test that
  // fails before releasing it still ends.
  static constexpr std::chrono::seconds kParkLimit{30};

  // `continue_after_release`: what OnBlock returns once released (true:
  // the scan goes on; false: it stops there).
  explicit ParkingVisitor(bool continue_after_release = true)
      : continue_(continue_after_release) {}

  void OnWorker(const WorkerView&) noexcept override {}
  bool OnBlock(const BlockView&) noexcept override {
    std::unique_lock<std::mutex> lock(mu_);
    parked_ = true;
    cv_.notify_all();
    cv_.wait_for(lock, kParkLimit, [this] { return released_; });
    left_ = true;
    return continue_;
  }

  // True once a scan has reached OnBlock, within `limit`.
  bool WaitParked(std::chrono::seconds limit = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [this] { return parked_; });
  }

  // True once the parked OnBlock has returned (released, or given up after
  // kParkLimit). A call that completes while this is false completed while
  // the scan was parked.
  bool left() {
    std::lock_guard<std::mutex> lock(mu_);
    return left_;
  }

  // Lets the parked scan (and any later OnBlock) go on.
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  const bool continue_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool parked_ = false;
  bool released_ = false;
  bool left_ = false;
};

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_PARKING_VISITOR_H_
