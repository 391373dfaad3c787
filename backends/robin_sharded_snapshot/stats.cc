// RobinShardedSnapshotBackend's stats (DESIGN.md, "Memory layout"):
// GetStats reads the live copy's counts and the memory the writer last
// accounted for in UpdateMemory.
#include "robin_backend.h"

#include <atomic>
#include <memory>

#include "kvindexer/backend_kit.h"
#include "worker_table.h"

namespace kvindexer::robin {

void RobinShardedSnapshotBackend::GetStats(BackendStats* stats) noexcept {
  if (stats == nullptr) return;
  ReadSection section(gate_);
  const SnapshotCopy& snapshot = copies_[section.live()];
  kit::SetStat(stats, &BackendStats::blocks, snapshot.blocks);
  kit::SetStat(stats, &BackendStats::placements, snapshot.placements);
  kit::SetStat(stats, &BackendStats::workers, snapshot.workers.present);
  kit::SetStat(stats, &BackendStats::hit_counters, snapshot.hit_counters);
  kit::SetStat(stats, &BackendStats::memory_bytes,
               writer_bytes_.load(std::memory_order_relaxed));
}

void RobinShardedSnapshotBackend::UpdateMemory() noexcept {
  uint64_t total = sizeof(*this);
  total += copies_[0].bytes() + copies_[1].bytes();
  for (const std::unique_ptr<BaseTable>& base : bases_) {
    if (base != nullptr) total += sizeof(BaseTable) + base->bytes();
  }
  total += mapping_pool_.cached_bytes();
  total += arena_.bytes();
  total += holdings_bytes_;
  // The writer's worker state, in O(1): what grows with the workers
  // present is kept up to date as they come and go.
  total += worker_bytes_;
  total += worker_states_.capacity() * sizeof(worker_states_[0]) +
           registry_.size() * sizeof(WorkerState);
  total += records_.capacity() * sizeof(records_[0]);
  total += registry_.bucket_count() *
           sizeof(tsl::detail_robin_hash::bucket_entry<
                  std::pair<std::string, uint32_t>, false>);
  total += ordinals_.bytes();
  total += retired_records_.capacity() * sizeof(retired_records_[0]);
  total += (touched_.capacity() + counted_.capacity()) * sizeof(int64_t) +
           worker_changes_.capacity() * sizeof(uint32_t);
  writer_bytes_.store(total, std::memory_order_relaxed);
}

}  // namespace kvindexer::robin
