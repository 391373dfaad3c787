// BuilderProcess: the server's side of a checkpoint build in a process of
// its own (durable/checkpoint_builder.h). Spawns the command, collects what
// it writes to standard output, waits for it and can kill it from another
// thread at any time without ever signalling a reused PID.
#ifndef KVINDEXER_DURABLE_BUILDER_PROCESS_H_
#define KVINDEXER_DURABLE_BUILDER_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kvindexer::durable {

class BuilderProcess {
 public:
  static constexpr std::chrono::milliseconds kGiveUpPoll{100};

  // Starts `executable` (a path, not searched in PATH) with the arguments
  // `argv` (argv[0] included), the environment of this process, standard
  // input from /dev/null, standard output to a pipe read by Wait, standard
  // error shared, no other descriptor, no blocked signals, default
  // dispositions, in a process group of its own. Errors: INVALID_ARGUMENT
  // for an empty argv; UNAVAILABLE, naming the executable, when it cannot
  // be started (for instance because it does not exist).
  static absl::StatusOr<std::unique_ptr<BuilderProcess>> Spawn(
      const std::string& executable, const std::vector<std::string>& argv);
  // Kills and reaps the child if Wait has not.
  ~BuilderProcess();
  BuilderProcess(const BuilderProcess&) = delete;
  BuilderProcess& operator=(const BuilderProcess&) = delete;

  // Blocks until the child has ended and reaps it. OK when it exited with
  // 0; otherwise INTERNAL saying how it ended (exit status or signal) and
  // the start of what it wrote to standard output. `give_up` is asked at
  // least every kGiveUpPoll while the child runs: at its first true the
  // child is killed (SIGKILL), and Wait goes on until it has ended. The end
  // of the child is noticed at once (a pidfd) or, on kernels without
  // pidfd_open, within kGiveUpPoll. Call at most once.
  absl::Status Wait(absl::FunctionRef<bool()> give_up = [] { return false; });
  // Thread-safe, any number of times: SIGKILL to the child unless it has
  // already been reaped.
  void Kill();
  pid_t pid() const { return pid_; }
  // After Wait: the exit status when the child exited (rather than being
  // killed by a signal), else nullopt.
  std::optional<int> exit_code() const { return exit_code_; }

 private:
  BuilderProcess(pid_t pid, int output_fd) : pid_(pid), output_fd_(output_fd) {}
  // Whether the child has ended (it is not reaped).
  bool Ended() const;
  const pid_t pid_;
  int output_fd_;  // read end of the child's standard output; -1 once read
  std::mutex mu_;
  bool reaped_ = false;           // guarded by mu_
  bool waited_ = false;           // Wait's thread only
  std::optional<int> exit_code_;  // Wait's thread only
};

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_BUILDER_PROCESS_H_
