// LivenessSweeper: the thread that runs a liveness sweep every period
// (docs/contract.md, "Recovery > Worker liveness and removal"). What a sweep
// does is the Indexer's business (OperatorView::SweepLiveness, which takes the
// mutation mutex, so a sweep falls between two mutations); this class only
// schedules it.
//
// The thread waits on a condition variable with the period as its timeout,
// so Stop (and the destructor) end it promptly, without waiting for the
// period to elapse. Tests of what sweeps do call OperatorView::SweepLiveness
// directly with a fake clock; this class is tested with a sweep function of
// the test's own.
//
// Thread safety: Stop may be called more than once, but not from two threads
// at a time, and not from `sweep`.
#ifndef KVINDEXER_SERVER_LIVENESS_SWEEPER_H_
#define KVINDEXER_SERVER_LIVENESS_SWEEPER_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace kvindexer {

class LivenessSweeper {
 public:
  // Starts a thread named "kvidx-liveness" that calls `sweep` every
  // `period`, the first time one period after the start. REQUIRES: period >
  // 0; `sweep` does not throw and stays callable until Stop returns.
  LivenessSweeper(std::chrono::milliseconds period,
                  std::function<void()> sweep);
  ~LivenessSweeper();
  LivenessSweeper(const LivenessSweeper&) = delete;
  LivenessSweeper& operator=(const LivenessSweeper&) = delete;

  // Lets a running sweep finish, then ends the thread; no sweep starts
  // after Stop returns.
  void Stop();

 private:
  void Run();

  const std::chrono::milliseconds period_;
  const std::function<void()> sweep_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_LIVENESS_SWEEPER_H_
