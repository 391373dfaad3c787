// The backends under test: the list given in KV_INDEXER_BACKEND, each loaded
// once for the whole run. Tests create a fresh IndexBackend per test from the
// loaded library's descriptor.
//
// Thread safety: LoadBackendsFromEnvironment runs once in main() before any
// test; afterwards the registry is read-only.
#ifndef KVINDEXER_TESTS_CONFORMANCE_BACKEND_REGISTRY_H_
#define KVINDEXER_TESTS_CONFORMANCE_BACKEND_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/backend_loader.h"

namespace kvindexer::conformance {

inline constexpr char kBackendVariable[] = "KV_INDEXER_BACKEND";
inline constexpr char kBackendPathVariable[] = "KV_INDEXER_BACKEND_PATH";

struct BackendUnderTest {
  std::string spec;   // one entry of KV_INDEXER_BACKEND, as given
  std::string label;  // test-name suffix: [A-Za-z0-9_] only, unique
  std::unique_ptr<LoadedBackend> loaded;
};

// Splits `list` (comma-separated; blanks around entries ignored) and loads
// every entry with LoadedBackend::Load. Fails on an empty list or on the first
// entry that does not load, naming it.
[[nodiscard]] absl::Status LoadBackends(const std::string& list,
                                        const std::string& search_path);

// Loaded backends, in the order given. Empty before LoadBackends succeeds.
std::vector<const BackendUnderTest*> BackendsUnderTest();

}  // namespace kvindexer::conformance

#endif  // KVINDEXER_TESTS_CONFORMANCE_BACKEND_REGISTRY_H_
