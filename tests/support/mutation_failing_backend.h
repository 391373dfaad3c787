// MutationFailingBackend: forwards every call to another IndexBackend, except
// that once told to, its mutations (Apply, RemoveWorker) fail with a given
// status and change nothing, while queries go on being answered. This is
// how a backend looks after a failure it cannot continue from (robin's
// writer copy poisoned by a failed rollback): writes refused, reads served.
//
// Thread safety: as the wrapped backend's; FailMutationsWith and Heal may be
// called concurrently with any call. Test-only; header-only.
#ifndef KVINDEXER_TESTS_SUPPORT_MUTATION_FAILING_BACKEND_H_
#define KVINDEXER_TESTS_SUPPORT_MUTATION_FAILING_BACKEND_H_

#include <atomic>
#include <mutex>
#include <optional>

#include "kvindexer/backend.h"

namespace kvindexer::test_support {

class MutationFailingBackend final : public IndexBackend {
 public:
  // REQUIRES: `inner` outlives this object. OWNERSHIP: not taken.
  explicit MutationFailingBackend(IndexBackend* inner) : inner_(inner) {}

  // From now on every mutation fails with `status` (not kOk).
  void FailMutationsWith(const BackendStatus& status) {
    std::lock_guard<std::mutex> lock(mu_);
    failure_ = status;
  }
  void Heal() {
    std::lock_guard<std::mutex> lock(mu_);
    failure_.reset();
  }
  // Mutations refused so far.
  int refused() const { return refused_.load(); }

  BackendStatus Apply(const ApplyBatchView& batch) noexcept override {
    if (std::optional<BackendStatus> failure = Failure()) return *failure;
    return inner_->Apply(batch);
  }
  BackendStatus Match(HashSpan hashes, bool count_as_hit,
                      BlockVisitor* visitor) noexcept override {
    return inner_->Match(hashes, count_as_hit, visitor);
  }
  BackendStatus PrefixScan(HashSpan hashes,
                           BlockVisitor* visitor) noexcept override {
    return inner_->PrefixScan(hashes, visitor);
  }
  BackendStatus HitCounts(HashSpan hashes, uint64_t* counts) noexcept override {
    return inner_->HitCounts(hashes, counts);
  }
  void GetStats(BackendStats* stats) noexcept override {
    inner_->GetStats(stats);
  }
  BackendStatus RemoveWorker(StringView worker_id,
                             uint32_t* existed) noexcept override {
    if (std::optional<BackendStatus> failure = Failure()) {
      if (existed != nullptr) *existed = 0;
      return *failure;
    }
    return inner_->RemoveWorker(worker_id, existed);
  }
  // A read: forwarded even while mutations fail.
  BackendStatus CountPlacements(StringView worker_id, uint64_t* counts_by_tier,
                                uint32_t* existed) noexcept override {
    return inner_->CountPlacements(worker_id, counts_by_tier, existed);
  }

 private:
  std::optional<BackendStatus> Failure() {
    std::lock_guard<std::mutex> lock(mu_);
    if (failure_.has_value()) ++refused_;
    return failure_;
  }

  IndexBackend* inner_;
  std::mutex mu_;
  std::optional<BackendStatus> failure_;  // guarded by mu_
  std::atomic<int> refused_{0};
};

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_MUTATION_FAILING_BACKEND_H_
