#include "common/shutdown_signals.h"

#include <cerrno>

#include <pthread.h>

#include <cstring>
#include <utility>

namespace kvindexer {

ShutdownSignals ShutdownSignals::Block() {
  ShutdownSignals signals;
  if (sigemptyset(&signals.set_) != 0 ||
      sigaddset(&signals.set_, SIGINT) != 0 ||
      sigaddset(&signals.set_, SIGTERM) != 0) {
    signals.error_ = "cannot build the signal set";
    return signals;
  }
  if (const int rc = pthread_sigmask(SIG_BLOCK, &signals.set_, nullptr);
      rc != 0) {
    signals.error_ = std::string("pthread_sigmask failed: ") + strerror(rc);
    return signals;
  }
  signals.active_ = true;
  return signals;
}

std::optional<int> ShutdownSignals::Wait() const {
  if (!active_) return std::nullopt;
  int signal_number = 0;
  // sigwait does not fail with EINTR; any error means the set is unusable.
  if (sigwait(&set_, &signal_number) != 0) return std::nullopt;
  return signal_number;
}

std::optional<int> ShutdownSignals::TakePending() const {
  if (!active_) return std::nullopt;
  const timespec no_wait{};
  for (;;) {
    const int signal_number = sigtimedwait(&set_, nullptr, &no_wait);
    if (signal_number > 0) return signal_number;
    if (errno != EINTR) return std::nullopt;  // EAGAIN: none pending
  }
}

std::string SignalName(int signal_number) {
  switch (signal_number) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    default:
      return "signal " + std::to_string(signal_number);
  }
}

ShutdownSignalWatcher::ShutdownSignalWatcher(const ShutdownSignals& signals,
                                             std::function<void(int)> on_signal)
    : active_(signals.active()),
      on_signal_(std::move(on_signal)),
      thread_([this, &signals] { Run(signals); }) {}

ShutdownSignalWatcher::~ShutdownSignalWatcher() {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    wake = active_ && !done_;
  }
  // The thread is inside sigwait, or has just left it and will find
  // stopping_ set; a thread-directed signal still pending when it exits is
  // discarded with it.
  if (wake) pthread_kill(thread_.native_handle(), SIGTERM);
  thread_.join();
}

void ShutdownSignalWatcher::Run(const ShutdownSignals& signals) {
  const std::optional<int> signal_number = signals.Wait();
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    if (!signal_number || stopping_) return;
  }
  on_signal_(*signal_number);
}

}  // namespace kvindexer
