// The robin_sharded_snapshot plugin's only exported symbol: its
// BackendDescriptor.
#include <stdlib.h>

#include "hash_key.h"
#include "kvindexer/backend.h"
#include "kvindexer/backend_kit.h"
#include "merge_config.h"
#include "robin_backend.h"

namespace kvindexer::robin {
namespace {

constexpr char kBuildInfo[] = KVINDEXER_KIT_BUILD_INFO
    "; 64 shards: sorted base tables under left-right tsl::robin_map deltas";

IndexBackend* Create(char* error, size_t error_size) noexcept {
  if (!ConfigureProcessHashKey(getenv(kHashKeyVariable), error, error_size)) {
    return nullptr;
  }
  return CreateConfiguredBackend(getenv(kMergeMinDeltaVariable), error,
                                 error_size);
}

constexpr BackendDescriptor kDescriptor = kit::MakeDescriptor(
    kBackendName, "0.1.0", kBuildInfo, &Create, &kit::DestroyBackend,
    // Queries read a published snapshot and take no lock a writer holds.
    ReadConcurrency::kReadersNeverWait);

}  // namespace
}  // namespace kvindexer::robin

KVINDEXER_DEFINE_BACKEND(kvindexer::robin::kDescriptor)
