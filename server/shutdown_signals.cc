#include "server/shutdown_signals.h"

#include <pthread.h>

#include <cstring>

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

}  // namespace kvindexer
