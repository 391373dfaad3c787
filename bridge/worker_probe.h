// The production WorkerProbe: a TCP connect to the host:port of the worker
// address with a 2 s timeout, run on a thread of its own so that the
// recovery engine never waits for it (docs/bridge-events.md, "Recovery >
// Worker liveness").
//
// Thread safety: TcpWorkerProbe's methods are called from one thread (the
// engine's); its connect thread shares nothing else. TcpConnectCheck is
// thread-safe.
#ifndef KVINDEXER_BRIDGE_WORKER_PROBE_H_
#define KVINDEXER_BRIDGE_WORKER_PROBE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "bridge/recovery_environment.h"
#include "bridge/worker_address.h"

namespace kvindexer::bridge {

inline constexpr std::chrono::milliseconds kWorkerProbeTimeout{2000};

// "host:port", with brackets around an IPv6 literal.
std::string FormatHostPort(const WorkerHostPort& target);

// Resolves `target` and connects a non-blocking TCP socket to each of its
// addresses in turn until one accepts, all within `timeout`, then closes it.
// OK when a connection was established; UNAVAILABLE naming the target and
// the reason (resolution failure, refused, unreachable, timed out)
// otherwise; CANCELLED once `*cancel` is true (checked at least every
// 50 ms while connecting; name resolution itself is not interruptible).
[[nodiscard]] absl::Status TcpConnectCheck(
    const WorkerHostPort& target, std::chrono::milliseconds timeout,
    const std::atomic<bool>* cancel = nullptr);

class TcpWorkerProbe final : public WorkerProbe {
 public:
  explicit TcpWorkerProbe(
      WorkerHostPort target,
      std::chrono::milliseconds timeout = kWorkerProbeTimeout);
  // Cancels a running check and joins the connect thread (within about
  // 50 ms, unless a name resolution is in progress).
  ~TcpWorkerProbe() override;
  TcpWorkerProbe(const TcpWorkerProbe&) = delete;
  TcpWorkerProbe& operator=(const TcpWorkerProbe&) = delete;

  void StartCheck() override;
  std::optional<absl::Status> TakeResult() override;

 private:
  void ConnectLoop();

  const WorkerHostPort target_;
  const std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool requested_ = false;              // guarded by mu_
  std::optional<absl::Status> result_;  // guarded by mu_
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: starts after the members above exist
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_WORKER_PROBE_H_
