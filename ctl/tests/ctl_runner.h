// Runs kv-indexer-ctl in-process for the tests: fixed environment, stdin
// text, captured output, and a `top` pause that returns at once and counts.
#ifndef KVINDEXER_CTL_TESTS_CTL_RUNNER_H_
#define KVINDEXER_CTL_TESTS_CTL_RUNNER_H_

#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/env.h"
#include "ctl/run_ctl.h"

namespace kvindexer::ctl::testing {

struct CtlResult {
  int code = -1;
  std::string out;
  std::string err;
  std::vector<std::chrono::milliseconds> sleeps;
};

inline CtlResult RunCtlForTest(
    const std::vector<std::string>& args,
    std::map<std::string, std::string, std::less<>> env = {},
    const std::string& stdin_text = "") {
  std::istringstream in(stdin_text);
  std::ostringstream out;
  std::ostringstream err;
  CtlResult result;
  CtlIo io{.env = MapEnvironment(std::move(env)),
           .in = &in,
           .out = &out,
           .err = &err,
           .sleep = [&](std::chrono::milliseconds d) {
             result.sleeps.push_back(d);
           }};
  result.code = RunCtl(args, io);
  result.out = out.str();
  result.err = err.str();
  return result;
}

}  // namespace kvindexer::ctl::testing

#endif  // KVINDEXER_CTL_TESTS_CTL_RUNNER_H_
