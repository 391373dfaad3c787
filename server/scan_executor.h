// ScanExecutor: a fixed set of threads that run admitted prefix scans.
//
// Why it exists: gRPC C++ 1.51 runs callback handlers on a small shared pool
// (two threads on a two-core machine). A scan that waits (for the backend's
// lock, or in a slow backend) would occupy one of those threads, and with all
// of them occupied the server could no longer reject surplus prefix queries
// or serve applies (contract.md §11.3: a rejection is immediate, applies are
// never blocked by prefix queries). So the callback thread decodes,
// validates and admits, then hands the scan to this executor and returns.
//
// The executor has as many threads as there are admission permits (capped at
// kMaxScanThreads), so an admitted scan never waits for a thread unless the
// permit count exceeds the cap. No thread is created per call.
//
// Thread safety: Submit may be called concurrently from any thread. The
// destructor runs every task already submitted, then joins the threads.
#ifndef KVINDEXER_SERVER_SCAN_EXECUTOR_H_
#define KVINDEXER_SERVER_SCAN_EXECUTOR_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kvindexer {

inline constexpr size_t kMaxScanThreads = 256;

class ScanExecutor {
 public:
  // Starts min(threads, kMaxScanThreads) threads, at least one.
  explicit ScanExecutor(size_t threads);
  ~ScanExecutor();
  ScanExecutor(const ScanExecutor&) = delete;
  ScanExecutor& operator=(const ScanExecutor&) = delete;

  // Runs `task` on one of the threads. Tasks must not throw.
  void Submit(std::function<void()> task);

  size_t thread_count() const { return threads_.size(); }

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_SCAN_EXECUTOR_H_
