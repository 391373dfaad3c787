#include "bridge/stream_watermarks.h"

#include <functional>
#include <utility>

namespace kvindexer::bridge {
namespace {

size_t Digest(std::string_view payload) {
  return std::hash<std::string_view>{}(payload);
}

}  // namespace

void StreamWatermarks::Clear() {
  applied_.reset();
  floor_.reset();
  epoch_.clear();
  fenced_ = false;
  replay_first_.reset();
  replay_last_.reset();
  replay_digest_.clear();
}

void StreamWatermarks::Reset(uint64_t applied, std::string epoch, bool fenced,
                             std::span<const LiveBatch> replayed) {
  Clear();
  applied_ = applied;
  epoch_ = std::move(epoch);
  fenced_ = fenced;
  if (!replayed.empty()) {
    replay_first_ = replayed.front().seq;
    replay_last_ = replayed.back().seq;
    for (const LiveBatch& batch : replayed) {
      replay_digest_[batch.seq] = Digest(batch.payload);
    }
  }
}

LiveVerdict StreamWatermarks::Classify(const LiveBatch& batch,
                                       std::string_view topic_epoch) const {
  const uint64_t seq = batch.seq;
  if (fenced_ && topic_epoch != epoch_) return LiveVerdict::kRestart;
  if (floor_ && seq <= *floor_) {
    return fenced_ ? LiveVerdict::kStale : LiveVerdict::kRestart;
  }
  if (!applied_) return LiveVerdict::kUntracked;
  if (seq <= *applied_) {
    if (fenced_ || !replay_first_) return LiveVerdict::kOverlap;
    auto it = replay_digest_.find(seq);
    if (it != replay_digest_.end() && it->second == Digest(batch.payload)) {
      return LiveVerdict::kOverlap;
    }
    // Between the replay's end and `applied` (a resume past it): nothing to
    // compare with; an older number or a different payload: a restart.
    if (seq > *replay_last_) return LiveVerdict::kOverlap;
    return LiveVerdict::kRestart;
  }
  if (seq == *applied_ + 1) return LiveVerdict::kNext;
  return LiveVerdict::kGap;
}

void StreamWatermarks::MarkLive(uint64_t seq) {
  if (!floor_ || seq > *floor_) floor_ = seq;
  if (replay_last_ && *floor_ >= *replay_last_) {
    replay_first_.reset();
    replay_last_.reset();
    replay_digest_.clear();
  }
}

}  // namespace kvindexer::bridge
