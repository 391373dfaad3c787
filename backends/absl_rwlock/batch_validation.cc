#include "batch_validation.h"

#include "status_message.h"

namespace kvindexer::absl_rwlock {

BackendStatus ValidateBatch(const ApplyBatchView& batch) noexcept {
  if (batch.worker_id.size == 0 || batch.worker_id.data == nullptr) {
    return ErrorStatus(BackendCode::kInvalidArgument,
                       "worker_id must not be empty");
  }
  if (batch.worker_address.size != 0 && batch.worker_address.data == nullptr) {
    return ErrorStatus(BackendCode::kInvalidArgument,
                       "worker_address has a length but no data");
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
    if (action.type == kActionClearAllAtTier) continue;  // hashes ignored
    if (action.hashes.size != 0 && action.hashes.data == nullptr) {
      return ErrorStatus(BackendCode::kInvalidArgument,
                         "action %zu: hashes has a length but no data", a);
    }
    if (action.type != kActionReport) continue;  // side arrays unused
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

}  // namespace kvindexer::absl_rwlock
