// The absl_rwlock plugin's only exported symbol: its BackendDescriptor.
#include "absl/base/config.h"
#include "absl_rwlock_backend.h"
#include "kvindexer/backend.h"
#include "kvindexer/backend_kit.h"

namespace kvindexer::absl_rwlock {
namespace {

#define KVINDEXER_ABSL_STRINGIFY_(x) #x
#define KVINDEXER_ABSL_STRINGIFY(x) KVINDEXER_ABSL_STRINGIFY_(x)

constexpr char kBuildInfo[] = KVINDEXER_KIT_BUILD_INFO
    "; abseil " KVINDEXER_ABSL_STRINGIFY(ABSL_LTS_RELEASE_VERSION);

constexpr BackendDescriptor kDescriptor = kit::MakeDescriptor(
    "absl_rwlock", "0.1.0", kBuildInfo, &kit::CreateBackend<AbslRwlockBackend>,
    &kit::DestroyBackend,
    // One reader-writer lock: a query waits while an apply holds it.
    ReadConcurrency::kReadersWaitForWriters);

}  // namespace
}  // namespace kvindexer::absl_rwlock

KVINDEXER_DEFINE_BACKEND(kvindexer::absl_rwlock::kDescriptor)
