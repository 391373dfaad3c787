// RobinShardedSnapshotBackend's construction. The rest of the class is
// defined by concern: apply.cc, publish.cc, delta_merge.cc, queries.cc,
// remove_worker.cc and stats.cc (robin_backend.h lists what each holds).
#include "robin_backend.h"

namespace kvindexer::robin {

RobinShardedSnapshotBackend::RobinShardedSnapshotBackend() { UpdateMemory(); }

RobinShardedSnapshotBackend::~RobinShardedSnapshotBackend() = default;

}  // namespace kvindexer::robin
