// kv-indexer-ctl: the operator's command line for a running
// kv-indexer-server (docs/cli.md).
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "common/env.h"
#include "ctl/run_ctl.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  kvindexer::ctl::CtlIo io{
      .env = kvindexer::ProcessEnvironment(),
      .in = &std::cin,
      .out = &std::cout,
      .err = &std::cerr,
      .sleep =
          [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); },
  };
  return kvindexer::ctl::RunCtl(args, io);
}
