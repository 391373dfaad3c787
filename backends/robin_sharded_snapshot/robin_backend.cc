// RobinShardedSnapshotBackend's construction. The rest of the class is
// defined by concern: apply.cc, publish.cc, delta_merge.cc, queries.cc and
// stats.cc (robin_backend.h lists what each holds).
#include "robin_backend.h"

#include <memory>

#include "worker_table.h"

namespace kvindexer::robin {

RobinShardedSnapshotBackend::RobinShardedSnapshotBackend() {
  published_table_ = std::make_unique<WorkerTable>();
  copies_[0].workers = published_table_.get();
  copies_[1].workers = published_table_.get();
  worker_bytes_ = TableBytes(*published_table_);
  UpdateMemory();
}

RobinShardedSnapshotBackend::~RobinShardedSnapshotBackend() = default;

}  // namespace kvindexer::robin
