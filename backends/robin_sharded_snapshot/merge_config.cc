#include "merge_config.h"

#include <cstdint>
#include <new>

#include "kvindexer/backend_kit.h"
#include "robin_backend.h"

namespace kvindexer::robin {

bool ParseMergeMinDelta(const char* value, size_t fallback, size_t* min_delta,
                        char* error, size_t error_size) noexcept {
  if (value == nullptr) {
    *min_delta = fallback;
    return true;
  }
  uint64_t parsed = 0;
  bool valid = *value != '\0';
  for (const char* c = value; valid && *c != '\0'; ++c) {
    if (*c < '0' || *c > '9') {
      valid = false;
      break;
    }
    parsed = parsed * 10 + static_cast<uint64_t>(*c - '0');
    if (parsed > UINT32_MAX) valid = false;
  }
  if (!valid) {
    kit::WriteCreateError(
        error, error_size,
        "%s=\"%.64s\" is not a number of blocks from 0 to 4294967295",
        kMergeMinDeltaVariable, value);
    return false;
  }
  *min_delta = static_cast<size_t>(parsed);
  return true;
}

RobinShardedSnapshotBackend* CreateConfiguredBackend(
    const char* min_delta_value, char* error, size_t error_size) noexcept {
  size_t min_delta = 0;
  if (!ParseMergeMinDelta(min_delta_value,
                          RobinShardedSnapshotBackend::kMergeMinDelta,
                          &min_delta, error, error_size)) {
    return nullptr;
  }
  auto* backend = new (std::nothrow) RobinShardedSnapshotBackend();
  if (backend == nullptr) {
    kit::WriteCreateError(error, error_size,
                          "out of memory creating the %s backend",
                          kBackendName);
    return nullptr;
  }
  backend->SetMergePolicy(min_delta,
                          RobinShardedSnapshotBackend::kMergeBaseRatio);
  return backend;
}

}  // namespace kvindexer::robin
