// RemovableModelBackend: ModelBackend with a working ABI 1.1 RemoveWorker,
// for tests of the host's removal paths. Test-only, header-only.
//
// RemoveWorker records the id, then takes the worker's placements out of the
// model with CLEAR_ALL_AT_TIER at every tier (not recorded in `applies`).
// The model keeps a record of the worker, so BackendStats.workers does not
// fall: the real backends' accounting is the conformance suite's business.
// It can be told to fail removals, and then changes nothing.
//
// Thread safety: as ModelBackend; `removed` and `fail_removals_with` are for
// the test's thread while no call is in progress.
#ifndef KVINDEXER_TESTS_SUPPORT_REMOVABLE_MODEL_BACKEND_H_
#define KVINDEXER_TESTS_SUPPORT_REMOVABLE_MODEL_BACKEND_H_

#include <optional>
#include <string>
#include <vector>

#include "kvindexer/backend.h"
#include "tests/support/model_backend.h"

namespace kvindexer::test_support {

class RemovableModelBackend final : public IndexBackend {
 public:
  // Every RemoveWorker call, in order, failed ones included.
  std::vector<std::string> removed;
  // When set, RemoveWorker fails with it and changes nothing.
  std::optional<BackendStatus> fail_removals_with;

  ModelBackend& inner() { return inner_; }
  const ModelBackend& inner() const { return inner_; }

  BackendStatus Apply(const ApplyBatchView& batch) noexcept override {
    return inner_.Apply(batch);
  }
  BackendStatus Match(HashSpan hashes, bool count_as_hit,
                      BlockVisitor* visitor) noexcept override {
    return inner_.Match(hashes, count_as_hit, visitor);
  }
  BackendStatus PrefixScan(HashSpan hashes,
                           BlockVisitor* visitor) noexcept override {
    return inner_.PrefixScan(hashes, visitor);
  }
  BackendStatus HitCounts(HashSpan hashes, uint64_t* counts) noexcept override {
    return inner_.HitCounts(hashes, counts);
  }
  void GetStats(BackendStats* stats) noexcept override {
    inner_.GetStats(stats);
  }
  BackendStatus RemoveWorker(StringView worker_id,
                             uint32_t* existed) noexcept override {
    const std::string id(worker_id.data, worker_id.size);
    removed.push_back(id);
    if (existed != nullptr) *existed = 0;
    if (fail_removals_with.has_value()) return *fail_removals_with;
    if (existed != nullptr) {
      *existed = inner_.model().workers().count(id) != 0 ? 1 : 0;
    }
    ActionView clears[kMaxTier];
    for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
      clears[tier - kTierHbm] =
          ActionView{kActionClearAllAtTier, tier, {}, {}, {}};
    }
    ApplyBatchView batch{};
    batch.worker_id = worker_id;
    batch.actions = clears;
    batch.action_count = kMaxTier;
    const BackendStatus status = inner_.Apply(batch);
    inner_.applies.pop_back();  // not one of the host's batches
    return status;
  }

  BackendStatus CountPlacements(StringView worker_id, uint64_t* counts_by_tier,
                                uint32_t* existed) noexcept override {
    return inner_.CountPlacements(worker_id, counts_by_tier, existed);
  }

 private:
  ModelBackend inner_;
};

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_REMOVABLE_MODEL_BACKEND_H_
