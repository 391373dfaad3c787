// ModelBackend: ReferenceModel's backend-level state (Store, CountHits)
// behind the IndexBackend interface, for tests of the host. It follows the
// backend.h obligations and records every call it receives, so that tests
// can check what reached the backend; it can also be told to fail every call.
//
// Worker ordinals are ReferenceModel::Worker::ordinal: a new worker takes the
// lowest one free, so after RemoveWorker (ABI 1.1) the next new worker gets
// the removed one's. A block's placements are reported in worker-ordinal
// order, then by tier.
//
// Thread safety: every IndexBackend method takes one mutex, so concurrent
// calls are serialised. The public members are for the test's thread, while
// no call is in progress.
#ifndef KVINDEXER_TESTS_SUPPORT_MODEL_BACKEND_H_
#define KVINDEXER_TESTS_SUPPORT_MODEL_BACKEND_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kvindexer/backend.h"
#include "tests/support/reference_model.h"

namespace kvindexer::test_support {

class ModelBackend final : public IndexBackend {
 public:
  // A copy of one action as the backend received it.
  struct RecordedAction {
    uint32_t type;
    uint32_t tier;
    std::vector<int64_t> hashes;
    std::vector<uint32_t> masks;
    std::vector<uint32_t> sizes;
  };
  struct RecordedBatch {
    std::string worker_id;
    std::string worker_address;
    std::optional<CacheSpec> spec;
    std::vector<RecordedAction> actions;
  };

  // Every call that reached the backend, in order.
  std::vector<RecordedBatch> applies;
  std::vector<std::vector<int64_t>> matches;
  std::vector<std::vector<int64_t>> prefix_scans;
  std::vector<std::vector<int64_t>> hit_count_calls;
  std::vector<std::string> removed_workers;  // RemoveWorker's ids
  // CountPlacements's ids (ABI 1.2); not in calls(): it never changes state.
  std::vector<std::string> counted_workers;
  // SetWriteMode's calls (ABI 1.4), each with the number of applies and
  // removals received before it; not in calls(): the model has one state
  // either way, every mutation visible at once.
  struct ModeChange {
    WriteMode mode;
    size_t applies_before;
    size_t removals_before;
  };
  std::vector<ModeChange> mode_changes;
  size_t blocks_visited = 0;  // OnBlock calls made by the last PrefixScan
  // When set, every call fails with this status and changes nothing.
  std::optional<BackendStatus> fail_with;
  // When set, RemoveWorker of a known worker is deliberately NOT atomic: it
  // revokes the worker's HBM placements, releases the mutex, calls this
  // (which may call into the backend), then finishes. For tests that must
  // show they can see a removal half done.
  std::function<void()> during_removal;

  size_t calls() const {
    return applies.size() + matches.size() + prefix_scans.size() +
           hit_count_calls.size() + removed_workers.size();
  }
  const ReferenceModel& model() const { return model_; }

  BackendStatus Apply(const ApplyBatchView& batch) noexcept override;
  BackendStatus Match(HashSpan hashes, bool count_as_hit,
                      BlockVisitor* visitor) noexcept override;
  BackendStatus PrefixScan(HashSpan hashes,
                           BlockVisitor* visitor) noexcept override;
  BackendStatus HitCounts(HashSpan hashes, uint64_t* counts) noexcept override;
  void GetStats(BackendStats* stats) noexcept override;
  BackendStatus RemoveWorker(StringView worker_id,
                             uint32_t* existed) noexcept override;
  // ABI 1.2: from the model's holdings.
  BackendStatus CountPlacements(StringView worker_id, uint64_t* counts_by_tier,
                                uint32_t* existed) noexcept override;
  // ABI 1.4: recorded; kBulkLoad is refused while a worker exists, as
  // backend.h requires.
  BackendStatus SetWriteMode(WriteMode mode) noexcept override;

 private:
  // Calls visitor->OnBlock for hashes[0..) until it returns false, each
  // worker announced before its first placement. Returns the number of
  // OnBlock calls.
  size_t Visit(HashSpan hashes, BlockVisitor* visitor) const;

  std::mutex mu_;
  ReferenceModel model_;
  bool bulk_load_ = false;  // the mode SetWriteMode last set
};

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_MODEL_BACKEND_H_
