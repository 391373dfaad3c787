// Helpers for writing a kvindexer backend: what every backend otherwise
// writes for itself around the ABI in kvindexer/backend.h.
//
//   * BackendStatus construction: OkStatus(), ErrorStatus(code, format, ...).
//   * Defensive checks of what the host passes in: CheckApplyBatch,
//     CheckHashes, CheckVisit, CheckHitCounts, CheckRemoveWorker,
//     CheckCountPlacements. The host has
//     validated every request before it reaches a backend, so these never
//     reject a request a correct host sends; they turn a malformed view (null
//     data with a length, an unknown action type or tier, a side array of the
//     wrong length) into kInvalidArgument instead of a read of memory the
//     backend does not own. They never re-implement the request validation
//     rules.
//   * SetStat: writes a BackendStats field only when the caller's struct_size
//     covers it (a host built against an older minor passes a smaller
//     struct).
//   * The plugin entry: MakeDescriptor fills the ABI numbers and the size,
//     WriteCreateError fills create()'s error buffer, CreateBackend<T> and
//     DestroyBackend are create() and destroy() for a default-constructible
//     backend, KVINDEXER_KIT_BUILD_INFO describes the compiler and build.
//
// Header-only; depends on kvindexer/backend.h and the C and C++ standard
// libraries only. Everything is noexcept and allocates nothing (except
// CreateBackend, which reports a failed allocation through its error buffer).
// Thread safety: every function is safe to call concurrently; none keeps
// state.
#ifndef KVINDEXER_BACKEND_KIT_H_
#define KVINDEXER_BACKEND_KIT_H_

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <new>
#include <type_traits>

#include "kvindexer/backend.h"

namespace kvindexer::kit {

// ---------------------------------------------------------------------------
// Statuses.

inline BackendStatus OkStatus() noexcept {
  BackendStatus status;
  status.code = BackendCode::kOk;
  status.message[0] = '\0';
  return status;
}

// A status with `code` and a printf-style message, truncated to fit
// BackendStatus::message (always NUL-terminated).
__attribute__((format(printf, 2, 3))) inline BackendStatus ErrorStatus(
    BackendCode code, const char* format, ...) noexcept {
  BackendStatus status;
  status.code = code;
  va_list args;
  va_start(args, format);
  vsnprintf(status.message, sizeof(status.message), format, args);
  va_end(args);
  return status;
}

inline bool IsOk(const BackendStatus& status) noexcept {
  return status.code == BackendCode::kOk;
}

// ---------------------------------------------------------------------------
// Defensive checks. Each returns OkStatus() or kInvalidArgument naming the
// first defect.

// A span whose length is not 0 has data.
inline BackendStatus CheckHashes(HashSpan hashes) noexcept {
  if (hashes.size != 0 && hashes.data == nullptr) {
    return ErrorStatus(BackendCode::kInvalidArgument,
                       "hashes has %zu entries but no data", hashes.size);
  }
  return OkStatus();
}

// Match and PrefixScan: a visitor and a well-formed span.
inline BackendStatus CheckVisit(HashSpan hashes,
                                const BlockVisitor* visitor) noexcept {
  if (visitor == nullptr) {
    return ErrorStatus(BackendCode::kInvalidArgument, "visitor is null");
  }
  return CheckHashes(hashes);
}

// HitCounts: a well-formed span and room for the counts.
inline BackendStatus CheckHitCounts(HashSpan hashes,
                                    const uint64_t* counts) noexcept {
  if (hashes.size != 0 && counts == nullptr) {
    return ErrorStatus(BackendCode::kInvalidArgument,
                       "counts is null for %zu hashes", hashes.size);
  }
  return CheckHashes(hashes);
}

// RemoveWorker (ABI 1.1): data behind a non-zero length. An empty id passes:
// no worker has it, so removing it is the no-op backend.h describes.
inline BackendStatus CheckRemoveWorker(StringView worker_id) noexcept {
  if (worker_id.size != 0 && worker_id.data == nullptr) {
    return ErrorStatus(BackendCode::kInvalidArgument,
                       "worker_id has %zu bytes but no data", worker_id.size);
  }
  return OkStatus();
}

// CountPlacements (ABI 1.2): data behind a non-zero length and room for the
// counts. An empty id passes: no worker has it, so its counts are zeros.
inline BackendStatus CheckCountPlacements(StringView worker_id,
                                          const uint64_t* counts) noexcept {
  if (counts == nullptr) {
    return ErrorStatus(BackendCode::kInvalidArgument, "counts_by_tier is null");
  }
  return CheckRemoveWorker(worker_id);
}

// Apply: a non-empty worker id; data behind every non-zero length; action
// types and tiers the ABI defines; REPORT side arrays either empty or one
// entry per hash. The hashes of CLEAR_ALL_AT_TIER and the side arrays of
// REVOKE and CLEAR are not looked at (a backend does not read them).
inline BackendStatus CheckApplyBatch(const ApplyBatchView& batch) noexcept {
  if (batch.worker_id.size == 0 || batch.worker_id.data == nullptr) {
    return ErrorStatus(BackendCode::kInvalidArgument,
                       "worker_id must not be empty");
  }
  if (batch.worker_address.size != 0 && batch.worker_address.data == nullptr) {
    return ErrorStatus(BackendCode::kInvalidArgument,
                       "worker_address has %zu bytes but no data",
                       batch.worker_address.size);
  }
  if (batch.action_count != 0 && batch.actions == nullptr) {
    return ErrorStatus(BackendCode::kInvalidArgument,
                       "batch has %zu actions but no action array",
                       batch.action_count);
  }
  for (size_t a = 0; a < batch.action_count; ++a) {
    const ActionView& action = batch.actions[a];
    if (action.type != kActionReport && action.type != kActionRevoke &&
        action.type != kActionClearAllAtTier) {
      return ErrorStatus(BackendCode::kInvalidArgument,
                         "action %zu: type %u is not supported", a,
                         action.type);
    }
    if (action.tier < kTierHbm || action.tier > kMaxTier) {
      return ErrorStatus(BackendCode::kInvalidArgument,
                         "action %zu: tier %u is not supported", a,
                         action.tier);
    }
    if (action.type == kActionClearAllAtTier) continue;
    if (action.hashes.size != 0 && action.hashes.data == nullptr) {
      return ErrorStatus(BackendCode::kInvalidArgument,
                         "action %zu: hashes has %zu entries but no data", a,
                         action.hashes.size);
    }
    if (action.type != kActionReport) continue;
    const U32Span* sides[] = {&action.component_masks, &action.block_sizes};
    const char* names[] = {"component_masks", "block_sizes"};
    for (int s = 0; s < 2; ++s) {
      const U32Span& side = *sides[s];
      if (side.size != 0 &&
          (side.size != action.hashes.size || side.data == nullptr)) {
        return ErrorStatus(BackendCode::kInvalidArgument,
                           "action %zu: %s has %zu entries but must be empty "
                           "or match %zu hashes",
                           a, names[s], side.size, action.hashes.size);
      }
    }
  }
  return OkStatus();
}

// ---------------------------------------------------------------------------
// Stats.

// Sets stats->*field to `value` when stats->struct_size covers the field;
// leaves it alone otherwise (GetStats' contract). REQUIRES: stats != nullptr.
inline void SetStat(BackendStats* stats, uint64_t BackendStats::*field,
                    uint64_t value) noexcept {
  uint64_t* target = &(stats->*field);
  const size_t offset = static_cast<size_t>(reinterpret_cast<char*>(target) -
                                            reinterpret_cast<char*>(stats));
  if (offset + sizeof(uint64_t) <= stats->struct_size) *target = value;
}

// ---------------------------------------------------------------------------
// The plugin entry.

// Writes a printf-style reason into create()'s error buffer (NUL-terminated,
// truncated); does nothing when `error` is null or `error_size` is 0.
__attribute__((format(printf, 3, 4))) inline void WriteCreateError(
    char* error, size_t error_size, const char* format, ...) noexcept {
  if (error == nullptr || error_size == 0) return;
  va_list args;
  va_start(args, format);
  vsnprintf(error, error_size, format, args);
  va_end(args);
}

// create() for a backend that is default-constructible and whose constructor
// does not throw: null, with a reason, when the allocation fails.
template <typename Backend>
IndexBackend* CreateBackend(char* error, size_t error_size) noexcept {
  static_assert(std::is_base_of_v<IndexBackend, Backend>);
  static_assert(std::is_nothrow_default_constructible_v<Backend>);
  IndexBackend* backend = new (std::nothrow) Backend();
  if (backend == nullptr) {
    WriteCreateError(error, error_size, "out of memory creating the backend");
  }
  return backend;
}

// destroy() for any backend create() made with new.
inline void DestroyBackend(IndexBackend* backend) noexcept { delete backend; }

// A descriptor for this header's ABI version. `name`, `version` and
// `build_info` must have static storage (string literals do).
// `read_concurrency` says whether queries can wait for mutations
// (ReadConcurrency; unknown counts as waiting).
constexpr BackendDescriptor MakeDescriptor(
    const char* name, const char* version, const char* build_info,
    IndexBackend* (*create)(char* error, size_t error_size) noexcept,
    void (*destroy)(IndexBackend* backend) noexcept,
    ReadConcurrency read_concurrency = ReadConcurrency::kUnknown) noexcept {
  return BackendDescriptor{kBackendAbiMajor,
                           kBackendAbiMinor,
                           sizeof(BackendDescriptor),
                           name,
                           version,
                           build_info,
                           create,
                           destroy,
                           read_concurrency};
}

}  // namespace kvindexer::kit

// A string literal naming the compiler and whether assertions are on, for
// BackendDescriptor::build_info; concatenate more with adjacent literals:
//   constexpr char kBuildInfo[] = KVINDEXER_KIT_BUILD_INFO "; 64 shards";
#ifdef __clang__
#define KVINDEXER_KIT_COMPILER_ "clang " __clang_version__
#else
#define KVINDEXER_KIT_COMPILER_ "GCC " __VERSION__
#endif
#ifdef NDEBUG
#define KVINDEXER_KIT_BUILD_TYPE_ "optimised (NDEBUG)"
#else
#define KVINDEXER_KIT_BUILD_TYPE_ "debug (assertions on)"
#endif
#define KVINDEXER_KIT_BUILD_INFO \
  "compiler " KVINDEXER_KIT_COMPILER_ "; build " KVINDEXER_KIT_BUILD_TYPE_

#endif  // KVINDEXER_BACKEND_KIT_H_
