// What the recovery engine needs from the outside world besides the server
// and the publisher sockets: time, waiting, the live queue, randomness and
// the worker probe of the heartbeats. Production code uses the steady
// clock, the StopRequest, a LiveBuffer (wrapped by the runner) and a
// TcpWorkerProbe; tests drive the engine with fakes and no real time
// (docs/bridge-events.md, "Recovery").
//
// Thread safety: implementations are used from the engine's thread only;
// SystemRecoveryClock may be stopped from any thread through its signal.
#ifndef KVINDEXER_BRIDGE_RECOVERY_ENVIRONMENT_H_
#define KVINDEXER_BRIDGE_RECOVERY_ENVIRONMENT_H_

#include <chrono>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "bridge/live_buffer.h"
#include "bridge/stop_request.h"

namespace kvindexer::bridge {

class RecoveryClock {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~RecoveryClock() = default;
  virtual Clock::time_point Now() = 0;
  // Waits `duration`, ending early when the engine must stop. Returns true
  // when it must stop.
  virtual bool WaitFor(std::chrono::milliseconds duration) = 0;
  virtual bool Stopping() = 0;
};

// Where live items come from.
class LiveQueue {
 public:
  virtual ~LiveQueue() = default;
  // The oldest item, waiting up to `timeout`; nullopt when none came.
  virtual std::optional<LiveItem> Pop(std::chrono::milliseconds timeout) = 0;
};

// Whether the worker is reachable, checked before each heartbeat
// (docs/bridge-events.md, "Recovery > Worker liveness"). A check may take
// seconds (a TCP connect with a 2 s timeout), so it runs asynchronously: the
// engine starts it and collects the outcome on a later turn of its loop,
// never waiting for it.
class WorkerProbe {
 public:
  virtual ~WorkerProbe() = default;
  // Starts a check. REQUIRES: no check is pending (started and its outcome
  // not yet taken).
  virtual void StartCheck() = 0;
  // The outcome of the pending check once it has one (OK: the worker
  // accepted a connection; otherwise why not), which ends the check;
  // nullopt while it runs. Never waits.
  virtual std::optional<absl::Status> TakeResult() = 0;
};

class SystemRecoveryClock final : public RecoveryClock {
 public:
  // `shutdown` must outlive the clock.
  explicit SystemRecoveryClock(const StopRequest* shutdown)
      : shutdown_(shutdown) {}
  Clock::time_point Now() override { return Clock::now(); }
  bool WaitFor(std::chrono::milliseconds duration) override {
    return shutdown_->WaitFor(duration);
  }
  bool Stopping() override { return shutdown_->triggered(); }

 private:
  const StopRequest* shutdown_;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_RECOVERY_ENVIRONMENT_H_
