// ServerProcess: starts a kv_indexer.v1 server binary (kv-indexer-server or
// kv-indexer-floor-server) on a free 127.0.0.1 port and stops it again.
//
// The binary is given KV_INDEXER_LISTEN_ADDR=127.0.0.1:<port> plus any extra
// environment. Start returns once a gRPC channel to it is connected; if the
// process exits first (for example because another process took the port
// between probe and bind) it retries on a new port, a bounded number of times.
//
// Thread safety: none.
#ifndef KVINDEXER_BENCH_SERVER_PROCESS_H_
#define KVINDEXER_BENCH_SERVER_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kvindexer::bench {

class ServerProcess {
 public:
  // `env` holds "NAME=value" entries added to (or replacing in) this
  // process's environment. The child's stdout and stderr go to `log_path`.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      const std::string& binary, const std::vector<std::string>& env,
      const std::string& log_path, absl::Duration ready_timeout);

  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // SIGTERM, then SIGKILL if the process has not exited after `timeout`.
  absl::Status Stop(absl::Duration timeout);

  const std::string& address() const { return address_; }

  // CPU time the process has used so far, user plus system, in seconds
  // (/proc/<pid>/stat; clock-tick resolution). Negative if unreadable.
  [[nodiscard]] double CpuSeconds() const;

 private:
  ServerProcess() = default;
  pid_t pid_ = -1;
  std::string address_;
};

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_SERVER_PROCESS_H_
