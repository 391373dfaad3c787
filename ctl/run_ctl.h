// kv-indexer-ctl as a function: main() passes the process's streams and
// environment; tests pass their own and read the exit code
// (ctl/exit_codes.h) and the text written.
#ifndef KVINDEXER_CTL_RUN_CTL_H_
#define KVINDEXER_CTL_RUN_CTL_H_

#include <chrono>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "common/env.h"

namespace kvindexer::ctl {

struct CtlIo {
  EnvLookup env;
  std::istream* in = nullptr;  // hashes for `explain -`
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  // How `top` waits between refreshes. Tests pass one that returns at once.
  std::function<void(std::chrono::milliseconds)> sleep;
};

// Runs the command line `args` (argv[1..]) and returns the exit code.
// Results go to io.out; every error is one line on io.err.
int RunCtl(const std::vector<std::string>& args, const CtlIo& io);

}  // namespace kvindexer::ctl

#endif  // KVINDEXER_CTL_RUN_CTL_H_
