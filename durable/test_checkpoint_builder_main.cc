// The checkpoint builder of the durable tests: what kv-indexer-server's
// main does with a builder call (durable/checkpoint_builder.h). With
// KVINDEXER_TEST_BUILDER_HOLD set to a path it first writes its PID to that
// file and then waits to be killed, so that a test can catch a build in
// progress.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <span>
#include <string>

#include "durable/checkpoint_builder.h"

int main(int argc, char** argv) {
  const std::span<const char* const> args(const_cast<const char* const*>(argv),
                                          static_cast<size_t>(argc));
  if (const char* hold = std::getenv("KVINDEXER_TEST_BUILDER_HOLD")) {
    const std::string tmp = std::string(hold) + ".part";
    {
      std::ofstream out(tmp);
      out << getpid() << "\n";
    }
    // Renamed whole, so that a reader never sees half a PID.
    std::rename(tmp.c_str(), hold);
    while (true) pause();
  }
  return kvindexer::durable::RunCheckpointBuilder(args);
}
