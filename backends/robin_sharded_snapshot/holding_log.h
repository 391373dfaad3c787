// HoldingLog: the hashes one worker has reported at one tier, kept for
// CLEAR_ALL_AT_TIER. Writer-side only; one copy.
//
// The log is lazy: REPORT appends a hash when it creates the placement, and
// REVOKE does not remove anything. An entry is therefore a candidate, not a
// fact: CLEAR revokes each entry whose placement still exists (a stale or
// repeated entry revokes nothing). Compact() drops stale and repeated entries
// once they outnumber the live ones, so the log stays within about twice the
// worker's placements at the tier.
//
// Storage is a list of fixed 4 KiB chunks: appending never moves earlier
// entries and the slack is at most one chunk.
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_HOLDING_LOG_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_HOLDING_LOG_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace kvindexer::robin {

class HoldingLog {
 public:
  // Throws std::bad_alloc.
  void Append(int64_t hash);

  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (size_t i = 0; i < size_; ++i) fn(At(i));
  }

  // ForEach, plus far(hash) kFar entries and near(hash) kNear entries before
  // fn(hash), so that the caller can prefetch in two stages what fn reads.
  static constexpr size_t kFar = 16;
  static constexpr size_t kNear = 8;
  template <typename Fn, typename Far, typename Near>
  void ForEachAhead(Fn&& fn, Far&& far, Near&& near) const {
    for (size_t i = 0; i < size_; ++i) {
      if (i + kFar < size_) far(At(i + kFar));
      if (i + kNear < size_) near(At(i + kNear));
      fn(At(i));
    }
  }

  void Clear() noexcept;

  // Keeps the entries for which `is_live(hash)` holds, each once; far and
  // near as for ForEachAhead. Throws std::bad_alloc (the log is then
  // unchanged).
  template <typename IsLive, typename Far, typename Near>
  void Compact(IsLive&& is_live, Far&& far, Near&& near) {
    std::vector<int64_t> kept;
    ForEachAhead(
        [&](int64_t hash) {
          if (is_live(hash)) kept.push_back(hash);
        },
        far, near);
    Rebuild(&kept);
  }

  size_t size() const { return size_; }
  uint64_t bytes() const {
    return chunks_.size() * kChunkEntries * sizeof(int64_t) +
           chunks_.capacity() * sizeof(chunks_[0]);
  }

 private:
  static constexpr size_t kChunkEntries = 512;

  int64_t At(size_t i) const {
    return chunks_[i / kChunkEntries][i % kChunkEntries];
  }

  // Sorts, de-duplicates and stores `entries` as the whole log.
  void Rebuild(std::vector<int64_t>* entries);

  std::vector<std::unique_ptr<int64_t[]>> chunks_;
  size_t size_ = 0;
};

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_HOLDING_LOG_H_
