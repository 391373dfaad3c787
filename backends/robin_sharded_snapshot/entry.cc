// The robin_sharded_snapshot plugin's only exported symbol: its
// BackendDescriptor.
#include <stdio.h>

#include <new>

#include "kvindexer/backend.h"
#include "robin_backend.h"

namespace kvindexer::robin {
namespace {

#ifdef NDEBUG
#define KVINDEXER_ROBIN_BUILD_TYPE "optimised (NDEBUG)"
#else
#define KVINDEXER_ROBIN_BUILD_TYPE "debug (assertions on)"
#endif

#ifdef __clang__
#define KVINDEXER_ROBIN_COMPILER "clang " __VERSION__
#else
#define KVINDEXER_ROBIN_COMPILER "GCC " __VERSION__
#endif

constexpr char kBuildInfo[] =
    "compiler " KVINDEXER_ROBIN_COMPILER "; build " KVINDEXER_ROBIN_BUILD_TYPE
    "; tsl::robin_map, 64 shards, left-right";

IndexBackend* Create(char* error, size_t error_size) noexcept {
  IndexBackend* backend = new (std::nothrow) RobinShardedSnapshotBackend();
  if (backend == nullptr && error != nullptr && error_size != 0) {
    snprintf(error, error_size, "out of memory creating the %s backend",
             kBackendName);
  }
  return backend;
}

void Destroy(IndexBackend* backend) noexcept { delete backend; }

constexpr BackendDescriptor kDescriptor = {
    kBackendAbiMajor, kBackendAbiMinor, sizeof(BackendDescriptor),
    kBackendName,     "0.1.0",          kBuildInfo,
    &Create,          &Destroy,
};

}  // namespace
}  // namespace kvindexer::robin

KVINDEXER_DEFINE_BACKEND(kvindexer::robin::kDescriptor)
