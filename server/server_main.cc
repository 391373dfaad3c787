// kv-indexer-server: the SGLang KV indexer's server, and its checkpoint
// builder.
#include <span>

#include "absl/synchronization/mutex.h"
#include "durable/checkpoint_builder.h"
#include "server/server_runner.h"

int main(int argc, char** argv) {
  const std::span<const char* const> args(const_cast<const char* const*>(argv),
                                          static_cast<size_t>(argc));
  // The server runs itself again to build a checkpoint
  // (durable/checkpoint_builder.h).
  if (kvindexer::durable::IsCheckpointBuilderCall(args)) {
    return kvindexer::durable::RunCheckpointBuilder(args);
  }
  // Debian's abseil is built with absl::Mutex's lock-order graph on, which
  // gRPC's and our mutexes then pay for on every acquisition; it is a
  // debugging aid that never changes what a lock does.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return kvindexer::RunServer(args);
}
