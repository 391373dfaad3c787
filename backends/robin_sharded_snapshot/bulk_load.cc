// RobinShardedSnapshotBackend::SetWriteMode (ABI 1.4; DESIGN.md, "Bulk
// loading"): a new backend filled with nothing published. Mutations go to
// the non-live copy only, with no catch-up of the other copy and with a
// looser merge ratio; the end of the load publishes the filled copy and
// makes the other one equal to it once.
#include <cstdint>
#include <mutex>
#include <new>

#include "kvindexer/backend_kit.h"
#include "robin_backend.h"

namespace kvindexer::robin {

using kit::ErrorStatus;
using kit::OkStatus;

BackendStatus RobinShardedSnapshotBackend::SetWriteMode(
    WriteMode mode) noexcept {
  std::lock_guard<std::mutex> lock(writer_mu_);
  // Only starting or ending a load that fills the non-live copy needs the
  // writer in order; the rest only records the mode.
  const bool writes = mode == WriteMode::kBulkLoad ? !bulk_mode_ : bulk_;
  if (writes) {
    if (BackendStatus ready = WriterReady(); ready.code != BackendCode::kOk) {
      return ready;
    }
  }
  switch (mode) {
    case WriteMode::kBulkLoad:
      if (bulk_mode_) return OkStatus();
      if (!registry_.empty()) {
        return ErrorStatus(BackendCode::kFailedPrecondition,
                           "a bulk load starts only on a backend that holds "
                           "no worker; this one holds %zu",
                           registry_.size());
      }
      // A backend emptied by removals may still reference tables and arrays
      // the load would replace while readers hold them: it loads as in
      // service (the mode is a hint).
      bulk_mode_ = true;
      bulk_ = Pristine();
      return OkStatus();
    case WriteMode::kServing:
      if (!bulk_mode_) return OkStatus();
      bulk_mode_ = false;
      if (!bulk_) return OkStatus();
      try {
        EndBulkLoad();
      } catch (const std::bad_alloc&) {
        poisoned_ = true;
        UpdateMemory();
        return ErrorStatus(BackendCode::kInternal,
                           "out of memory copying the loaded index into the "
                           "second snapshot copy; recreate the backend");
      }
      UpdateMemory();
      return OkStatus();
  }
  return ErrorStatus(BackendCode::kInvalidArgument, "unknown write mode %u",
                     static_cast<unsigned>(mode));
}

bool RobinShardedSnapshotBackend::Pristine() const {
  for (uint32_t shard = 0; shard < SnapshotCopy::kShards; ++shard) {
    if (bases_[shard] != nullptr) return false;
    for (const SnapshotCopy& copy : copies_) {
      if (!copy.delta(shard).empty() || !copy.counters(shard).empty()) {
        return false;
      }
    }
  }
  for (const SnapshotCopy& copy : copies_) {
    if (copy.blocks != 0 || copy.workers.present != 0) return false;
  }
  return true;
}

void RobinShardedSnapshotBackend::EndBulkLoad() {
  // Deltas past the serving policy are merged now, so that the copy made
  // below is no larger than the deltas service keeps. Out of memory here
  // only leaves them larger.
  MergeDeltas(merge_base_ratio_, SIZE_MAX);

  SnapshotCopy& filled = copies_[1 - gate_.live()];
  filled.version = copies_[gate_.live()].version + 1;
  gate_.PublishAndDrain({});
  bulk_ = false;

  // The other copy is pristine and no reader can see it any more: give it
  // the same bases and worker records and its own copy of every delta and
  // counter table. From here on every array is shared, as after a catch-up.
  const SnapshotCopy& live = copies_[gate_.live()];
  SnapshotCopy& other = copies_[1 - gate_.live()];
  for (uint32_t shard = 0; shard < SnapshotCopy::kShards; ++shard) {
    const BaseTable& base = live.base(shard);
    other.InstallBase(shard, &base, MergeLimit(base));
    SnapshotCopy::Map& delta = other.delta(shard);
    delta.reserve(live.delta(shard).size());
    for (const auto& [key, record] : live.delta(shard)) {
      delta.insert({key, record});
      if (!record.tombstone() && record.spilled()) {
        SpillArena::ClearPrivate(record.spill());
      }
    }
    SnapshotCopy::CounterMap& counters = other.counters(shard);
    counters.reserve(live.counters(shard).size());
    for (const auto& [hash, count] : live.counters(shard)) {
      counters.insert({hash, count});
    }
  }
  other.workers = live.workers;
  other.version = live.version;
  other.blocks = live.blocks;
  other.placements = live.placements;
  other.hit_counters = live.hit_counters;
}

}  // namespace kvindexer::robin
