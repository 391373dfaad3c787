// One stream of a multi-stream bridge (docs/bridge-events.md, "Many streams
// in one process > Isolation"): runs attempts of the stream until the clock
// says stop. An attempt that ends with an error parks the stream: the error
// is logged at ERROR and the next attempt starts after the park period.
// Nothing here ends the process.
//
// Thread safety: Run() from one thread; state() from any thread.
#ifndef KVINDEXER_BRIDGE_STREAM_SUPERVISOR_H_
#define KVINDEXER_BRIDGE_STREAM_SUPERVISOR_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "bridge/recovery_environment.h"

namespace kvindexer::bridge {

inline constexpr std::chrono::milliseconds kParkRetryPeriod{60'000};

class StreamSupervisor {
 public:
  // Runs one attempt of the stream until it stops (OK, or the clock is
  // stopping) or fails (the error). Each call starts from nothing: the
  // sockets and the recovery engine are made anew.
  using Attempt = std::function<absl::Status()>;

  // `clock` must outlive the supervisor; `name` labels the log lines.
  StreamSupervisor(std::string name, Attempt attempt, RecoveryClock* clock,
                   std::chrono::milliseconds park_period = kParkRetryPeriod);

  // Returns once the clock is stopping.
  void Run();

  bool parked() const { return parked_.load(); }
  // Times the stream was parked.
  uint64_t parks() const { return parks_.load(); }

 private:
  const std::string name_;
  const Attempt attempt_;
  RecoveryClock* clock_;
  const std::chrono::milliseconds park_period_;
  std::atomic<bool> parked_{false};
  std::atomic<uint64_t> parks_{0};
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_STREAM_SUPERVISOR_H_
