// Finding and signalling the checkpoint builder processes a spawned
// kv-indexer-server starts (durable/checkpoint_builder.h): the durability
// bench pauses them to measure a checkpoint in slices, or stops them to
// hold the log at its replay cap.
//
// A builder's PID is only signalled while the builder is still the
// server's child: once the server has reaped it, the PID may belong to
// anyone. BuilderStall keeps a pidfd of every process it stopped, so that
// it can end them later even after the server is gone (where the kernel
// gives pidfds; elsewhere by PID while the parent check holds).
//
// Thread safety: a BuilderStall is driven by one thread.
#ifndef KVINDEXER_BENCH_BUILDER_SIGNALS_H_
#define KVINDEXER_BENCH_BUILDER_SIGNALS_H_

#include <sys/types.h>

#include <vector>

namespace kvindexer::bench {

// The parent of `pid` from /proc/<pid>/stat; 0 when it is gone.
pid_t ParentOf(pid_t pid);

// The children of `parent`, in no particular order: from its threads'
// /proc lists, or from a scan of /proc where the kernel keeps none.
std::vector<pid_t> ChildrenOf(pid_t parent);

// Signals `builder` only while it is still `server`'s child.
bool SignalBuilder(pid_t builder, pid_t server, int signal);

// Stops (SIGSTOP) the builders of one server, and SIGKILLs them when
// destroyed. A builder arms a parent-death SIGKILL as it starts, which ends
// it stopped or not when its server dies; one stopped before that (within
// the spawn) would wait, stopped, for ever, and its server with it.
class BuilderStall {
 public:
  explicit BuilderStall(pid_t server) : server_(server) {}
  ~BuilderStall();
  BuilderStall(const BuilderStall&) = delete;
  BuilderStall& operator=(const BuilderStall&) = delete;

  // Stops every child of the server not stopped yet.
  void StopNew();
  // How many processes have been stopped so far.
  size_t stopped() const { return stopped_.size(); }

 private:
  struct Stopped {
    pid_t pid;
    int pidfd;
  };
  pid_t server_;
  std::vector<Stopped> stopped_;
};

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_BUILDER_SIGNALS_H_
