// Graceful shutdown on SIGINT or SIGTERM, without asynchronous signal
// handlers: the two signals are blocked in every thread and taken
// synchronously with sigwait.
//
// ShutdownSignals::Block() must run in the main thread before any other
// thread starts (gRPC, ZMQ and spdlog may start threads): every thread
// created later inherits the mask, so the signals stay pending until Wait()
// takes one. If they cannot be blocked, active() is false, the process keeps
// the default actions (a signal is then not acted on gracefully) and startup
// goes on; the caller reports error() once.
//
// Either the main thread calls Wait(), or a ShutdownSignalWatcher waits on a
// thread of its own and runs a callback.
#ifndef KVINDEXER_COMMON_SHUTDOWN_SIGNALS_H_
#define KVINDEXER_COMMON_SHUTDOWN_SIGNALS_H_

#include <signal.h>

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace kvindexer {

class ShutdownSignals {
 public:
  // Blocks SIGINT and SIGTERM in the calling thread. On failure active() is
  // false and error() says why.
  static ShutdownSignals Block();

  bool active() const { return active_; }
  const std::string& error() const { return error_; }

  // Waits until SIGINT or SIGTERM is pending for this thread or the process,
  // takes it and returns its number. Returns nullopt at once when not
  // active, or when sigwait fails. Wait from one thread at a time.
  std::optional<int> Wait() const;
  // Takes SIGINT or SIGTERM if one is pending already and returns its
  // number; nullopt at once otherwise (or when not active). Never waits.
  std::optional<int> TakePending() const;

 private:
  sigset_t set_{};
  bool active_ = false;
  std::string error_;
};

// "SIGINT", "SIGTERM", or "signal N" for any other number.
std::string SignalName(int signal_number);

// Waits for SIGINT or SIGTERM on a thread of its own and calls
// `on_signal(signal_number)` there, at most once.
//
// Destruction stops the watcher: if no signal has arrived it wakes the thread
// (with a SIGTERM directed at that thread only) without calling on_signal,
// and then joins it, so on_signal never runs after the destructor returns.
// A signal that arrives while the watcher is being destroyed may be dropped.
//
// `signals` must outlive the watcher. When !signals.active() the watcher
// never calls on_signal.
class ShutdownSignalWatcher {
 public:
  ShutdownSignalWatcher(const ShutdownSignals& signals,
                        std::function<void(int)> on_signal);
  ~ShutdownSignalWatcher();

  ShutdownSignalWatcher(const ShutdownSignalWatcher&) = delete;
  ShutdownSignalWatcher& operator=(const ShutdownSignalWatcher&) = delete;

 private:
  void Run(const ShutdownSignals& signals);

  const bool active_;  // signals.active(): only then may SIGTERM wake Run
  std::function<void(int)> on_signal_;
  std::mutex mu_;
  bool stopping_ = false;  // guarded by mu_
  bool done_ = false;      // guarded by mu_; the thread has left sigwait
  std::thread thread_;     // last: starts after the members above exist
};

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_SHUTDOWN_SIGNALS_H_
