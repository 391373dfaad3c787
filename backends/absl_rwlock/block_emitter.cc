#include "block_emitter.h"

namespace kvindexer::absl_rwlock {

BlockEmitter::BlockEmitter(const WorkerRegistry& workers, BlockVisitor* visitor)
    : workers_(workers), visitor_(visitor) {}

bool BlockEmitter::Emit(size_t index, const BlockRecord* record) {
  BlockView view{};
  view.index = index;
  if (record == nullptr || record->placements.empty()) {
    return visitor_->OnBlock(view);
  }
  const size_t n = record->placements.size();
  scratch_.resize(n);
  uint32_t highest = 0;
  for (size_t i = 0; i < n; ++i) {
    scratch_[i] = record->placements[i].Unpack();
    if (scratch_[i].worker > highest) highest = scratch_[i].worker;
  }
  if (highest / 64 >= seen_.size()) seen_.resize(highest / 64 + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t worker = scratch_[i].worker;
    uint64_t& word = seen_[worker / 64];
    const uint64_t bit = uint64_t{1} << (worker % 64);
    if ((word & bit) != 0) continue;
    word |= bit;
    visitor_->OnWorker(workers_.View(worker));
  }
  view.token_count = record->token_count;
  view.placements = scratch_.data();
  view.placement_count = n;
  return visitor_->OnBlock(view);
}

}  // namespace kvindexer::absl_rwlock
