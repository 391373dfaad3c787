// Defensive checks on an ApplyBatchView before the absl_rwlock backend takes
// its lock. The host has already validated the request (docs/contract.md,
// "ApplyExternalKvBatch > Apply validation");
// these checks only make sure a malformed view from a broken host is refused
// instead of touching memory it does not own. They never re-implement the
// contract's messages.
#ifndef KVINDEXER_BACKENDS_ABSL_RWLOCK_BATCH_VALIDATION_H_
#define KVINDEXER_BACKENDS_ABSL_RWLOCK_BATCH_VALIDATION_H_

#include "kvindexer/backend.h"

namespace kvindexer::absl_rwlock {

// kOk, or kInvalidArgument naming the first defect: empty worker id, null
// arrays with a non-zero length, an unknown action type, a tier outside
// 1..3, or a REPORT side array whose length is neither 0 nor the number of
// hashes.
BackendStatus ValidateBatch(const ApplyBatchView& batch) noexcept;

}  // namespace kvindexer::absl_rwlock

#endif  // KVINDEXER_BACKENDS_ABSL_RWLOCK_BATCH_VALIDATION_H_
