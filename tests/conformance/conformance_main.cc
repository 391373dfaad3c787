// kvindexer-conformance: runs the backend conformance suite against every
// backend named in KV_INDEXER_BACKEND. An unset or empty variable is a usage
// error, never a silent pass.
#include <cstdio>
#include <string>
#include <string_view>

#include "backend_registry.h"
#include "common/env.h"
#include "gtest/gtest.h"

namespace {

std::string Env(std::string_view name) {
  return kvindexer::ProcessEnvironment()(name).value_or("");
}

void PrintUsage(const char* argv0) {
  std::fprintf(
      stderr,
      "usage: %s [gtest flags]\n"
      "\n"
      "Runs the kvindexer backend conformance suite.\n"
      "  %s  (required) comma-separated backend names or .so paths,\n"
      "      e.g. absl_rwlock or /path/to/kvindexer-backend-mine.so\n"
      "  %s  (optional) colon-separated directories searched for\n"
      "      kvindexer-backend-<name>.so\n"
      "  KV_INDEXER_CONFORMANCE_SEED, KV_INDEXER_CONFORMANCE_ITERATIONS\n"
      "      (optional) base seed and number of sequences of the\n"
      "      differential test\n",
      argv0, kvindexer::conformance::kBackendVariable,
      kvindexer::conformance::kBackendPathVariable);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string list = Env(kvindexer::conformance::kBackendVariable);
  if (list.find_first_not_of(" \t,") == std::string::npos) {
    std::fprintf(stderr, "error: %s is not set or empty\n\n",
                 kvindexer::conformance::kBackendVariable);
    PrintUsage(argv[0]);
    return 2;
  }
  const absl::Status loaded = kvindexer::conformance::LoadBackends(
      list, Env(kvindexer::conformance::kBackendPathVariable));
  if (!loaded.ok()) {
    std::fprintf(stderr, "error: %s\n", loaded.ToString().c_str());
    return 1;
  }
  for (const auto* b : kvindexer::conformance::BackendsUnderTest()) {
    const auto& d = b->loaded->descriptor();
    std::printf("backend %s: %s %s (%s) from %s\n", b->label.c_str(),
                d.name != nullptr ? d.name : "?",
                d.version != nullptr ? d.version : "?",
                d.build_info != nullptr ? d.build_info : "",
                b->loaded->path().c_str());
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
