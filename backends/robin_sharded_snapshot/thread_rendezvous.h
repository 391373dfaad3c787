// Thread coordination for robin's tests: a one-shot rendezvous between a
// thread stopped inside the backend (a writer hook, a visitor callback) and
// the test, and a check that a call completes on another thread. Waits are
// bounded by kTimeout, so a backend that blocks fails the test instead of
// hanging it. Test-only.
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_THREAD_RENDEZVOUS_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_THREAD_RENDEZVOUS_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace kvindexer::robin::testing {

inline constexpr auto kTimeout = std::chrono::seconds(10);

// A one-shot rendezvous: one side blocks in Hold() until Release(); the other
// waits for it to arrive with WaitHeld().
class Rendezvous {
 public:
  void Hold() {
    std::unique_lock<std::mutex> lock(mu_);
    held_ = true;
    cv_.notify_all();
    cv_.wait_for(lock, kTimeout, [&] { return released_; });
  }
  bool WaitHeld() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kTimeout, [&] { return held_; });
  }
  bool WaitReleased() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kTimeout, [&] { return released_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  bool released_ = false;
};

// Runs `fn` on a thread and reports whether it finished within the timeout.
template <typename Fn>
bool CompletesOnAnotherThread(Fn fn) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread t([&] {
    fn();
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_all();
  });
  bool finished;
  {
    std::unique_lock<std::mutex> lock(mu);
    finished = cv.wait_for(lock, kTimeout, [&] { return done; });
  }
  t.join();
  return finished;
}

}  // namespace kvindexer::robin::testing

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_THREAD_RENDEZVOUS_H_
