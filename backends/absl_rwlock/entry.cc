// The absl_rwlock plugin's only exported symbol: its BackendDescriptor.
#include <stdio.h>

#include <new>

#include "absl/base/config.h"
#include "absl_rwlock_backend.h"
#include "kvindexer/backend.h"

namespace kvindexer::absl_rwlock {
namespace {

#define KVINDEXER_STRINGIFY_(x) #x
#define KVINDEXER_STRINGIFY(x) KVINDEXER_STRINGIFY_(x)

#ifdef NDEBUG
#define KVINDEXER_BUILD_TYPE "release (NDEBUG)"
#else
#define KVINDEXER_BUILD_TYPE "debug (assertions on)"
#endif

#ifdef __clang__
#define KVINDEXER_COMPILER __VERSION__
#else
#define KVINDEXER_COMPILER "GCC " __VERSION__
#endif

constexpr char kBuildInfo[] =
    "compiler " KVINDEXER_COMPILER "; build " KVINDEXER_BUILD_TYPE
    "; abseil " KVINDEXER_STRINGIFY(ABSL_LTS_RELEASE_VERSION);

IndexBackend* Create(char* error, size_t error_size) noexcept {
  IndexBackend* backend = new (std::nothrow) AbslRwlockBackend();
  if (backend == nullptr && error != nullptr && error_size != 0) {
    snprintf(error, error_size,
             "out of memory creating the absl_rwlock backend");
  }
  return backend;
}

void Destroy(IndexBackend* backend) noexcept { delete backend; }

constexpr BackendDescriptor kDescriptor = {
    kBackendAbiMajor, kBackendAbiMinor, sizeof(BackendDescriptor),
    "absl_rwlock",    "0.1.0",          kBuildInfo,
    &Create,          &Destroy,
};

}  // namespace
}  // namespace kvindexer::absl_rwlock

KVINDEXER_DEFINE_BACKEND(kvindexer::absl_rwlock::kDescriptor)
