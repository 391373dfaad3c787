// The robin_sharded_snapshot plugin's only exported symbol: its
// BackendDescriptor.
#include <stdio.h>
#include <stdlib.h>

#include <new>

#include "kvindexer/backend.h"
#include "merge_config.h"
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
    "; 64 shards: sorted base tables under left-right tsl::robin_map "
    "deltas";

IndexBackend* Create(char* error, size_t error_size) noexcept {
  return CreateConfiguredBackend(getenv(kMergeMinDeltaVariable), error,
                                 error_size);
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
