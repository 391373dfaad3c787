// ShutdownSignals: turns SIGINT and SIGTERM into a synchronous event that the
// main thread waits for (docs/contract.md,
// "Transport > Startup and shutdown").
//
// Block() must run in the main thread before any other thread starts: it
// blocks both signals in the calling thread, and every thread created later
// inherits that mask, so the signals stay pending until Wait() takes them
// with sigwait(). No asynchronous signal handler runs.
//
// If the signals cannot be blocked, that is reported once and the process
// keeps the default actions (the signal is not acted on gracefully); startup
// does not fail because of it.
//
// Thread safety: Block() once, from the main thread; Wait() from one thread.
#ifndef KVINDEXER_SERVER_SHUTDOWN_SIGNALS_H_
#define KVINDEXER_SERVER_SHUTDOWN_SIGNALS_H_

#include <signal.h>

#include <optional>
#include <string>

namespace kvindexer {

class ShutdownSignals {
 public:
  // Blocks SIGINT and SIGTERM. On failure active() is false and error()
  // says why.
  static ShutdownSignals Block();

  bool active() const { return active_; }
  const std::string& error() const { return error_; }

  // Waits until SIGINT or SIGTERM arrives and returns its number. Returns
  // nullopt when not active or when sigwait fails.
  std::optional<int> Wait() const;

 private:
  sigset_t set_{};
  bool active_ = false;
  std::string error_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_SHUTDOWN_SIGNALS_H_
