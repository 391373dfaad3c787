// RobinShardedSnapshotBackend: giving back, right after a removal, the room
// the removed worker's blocks took in the shards' hash tables (DESIGN.md,
// "Workers"). robin_map never shrinks on erase, so without this a worker
// whose blocks sat in the deltas would leave their buckets behind, in both
// copies, until the next merge of each shard.
#include <cstdint>
#include <new>
#include <utility>
#include <vector>

#include "robin_backend.h"

namespace kvindexer::robin {
namespace {

static_assert(SnapshotCopy::kShards == 64, "the shard sets are 64-bit masks");

// A table of `buckets` buckets that held `before` entries and holds `after`
// is rebuilt when the removal took at least a quarter of its room and left it
// less than a quarter full. The first condition keeps the rebuild (linear in
// the buckets) proportional to what the removal took, and leaves alone the
// room a merge kept on purpose (SnapshotCopy::InstallBase); the second keeps
// a table that is still well used, so that it does not grow straight back.
bool LeftSparse(size_t before, size_t after, size_t buckets, float max_load) {
  const double quarter = double(buckets) * double(max_load) / 4.0;
  return before > after && double(before - after) >= quarter &&
         double(after) < quarter;
}

}  // namespace

RobinShardedSnapshotBackend::ShardSizes
RobinShardedSnapshotBackend::SizesOfShards() const {
  const SnapshotCopy& live = copies_[gate_.live()];
  ShardSizes sizes;
  for (uint32_t shard = 0; shard < SnapshotCopy::kShards; ++shard) {
    sizes.deltas[shard] = live.delta(shard).size();
    sizes.counters[shard] = live.counters(shard).size();
  }
  return sizes;
}

void RobinShardedSnapshotBackend::FitEmptiedShards(
    const ShardSizes& before, size_t touched_capacity) noexcept {
  // The list of changed blocks grew to the worker's placements; the next
  // applies need only what they needed before. (It is empty here: the
  // catch-up is done.)
  if (touched_.capacity() > touched_capacity) {
    std::vector<int64_t> fitted;
    try {
      fitted.reserve(touched_capacity);
    } catch (const std::bad_alloc&) {
      // Then it starts from nothing, which frees just as much.
    }
    touched_.swap(fitted);
  }

  // Both copies are equal here, so one of them decides for both.
  const SnapshotCopy& live = copies_[gate_.live()];
  uint64_t deltas = 0;
  uint64_t counters = 0;
  for (uint32_t shard = 0; shard < SnapshotCopy::kShards; ++shard) {
    const SnapshotCopy::Map& delta = live.delta(shard);
    if (LeftSparse(before.deltas[shard], delta.size(), delta.bucket_count(),
                   delta.max_load_factor())) {
      deltas |= uint64_t{1} << shard;
    }
    const SnapshotCopy::CounterMap& counter = live.counters(shard);
    if (LeftSparse(before.counters[shard], counter.size(),
                   counter.bucket_count(), counter.max_load_factor())) {
      counters |= uint64_t{1} << shard;
    }
  }
  if ((deltas | counters) == 0) return;

  // Left-right, as a merge installs its tables: the non-live copy first,
  // publish, wait for its old readers, then the other copy. A rebuild changes
  // no entry, so readers of either copy see the same blocks throughout, and
  // one that cannot allocate simply leaves that table as large as it was.
  const auto fit = [&](SnapshotCopy& copy) {
    for (uint32_t shard = 0; shard < SnapshotCopy::kShards; ++shard) {
      const uint64_t bit = uint64_t{1} << shard;
      try {
        if ((deltas & bit) != 0) copy.FitDelta(shard);
        if ((counters & bit) != 0) copy.FitCounters(shard);
      } catch (const std::bad_alloc&) {
      }
    }
  };
  fit(copies_[1 - gate_.live()]);
  gate_.PublishAndDrain({});
  fit(copies_[1 - gate_.live()]);
}

}  // namespace kvindexer::robin
