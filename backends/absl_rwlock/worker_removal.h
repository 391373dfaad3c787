// RemoveWorker for the absl_rwlock backend (ABI 1.1, include/kvindexer/
// backend.h): takes every placement of one worker out of the blocks, deletes
// the blocks (and hit counters) left with none, deletes the worker's record
// and frees its ordinal for the next new worker (worker_registry.h).
//
// All or nothing: the one allocation a removal may need (room in the free
// ordinal list) is made before anything changes; everything after it only
// erases. Then the tables that the removal left sparse are rebuilt smaller
// (swiss_table.h, ShrinkIfSparse), so the memory really comes back; a failed
// rebuild leaves the table as it was and the removal stands.
//
// Cost: O(placements of the worker), plus, now and then, O(entries) for a
// table rebuilt smaller.
//
// Thread safety: none; the caller holds the backend's lock exclusively, so
// no reader sees a removal half done.
#ifndef KVINDEXER_BACKENDS_ABSL_RWLOCK_WORKER_REMOVAL_H_
#define KVINDEXER_BACKENDS_ABSL_RWLOCK_WORKER_REMOVAL_H_

#include <stdint.h>

#include "absl/strings/string_view.h"
#include "block_table.h"
#include "hit_counter_table.h"
#include "kvindexer/backend.h"
#include "worker_registry.h"

namespace kvindexer::absl_rwlock {

// Removes worker `id` if it is registered. *existed is set to 1 when a record
// was deleted, else 0. Fails only with kResourceExhausted, having changed
// nothing. REQUIRES: existed != nullptr.
BackendStatus RemoveWorkerFromTables(absl::string_view id, BlockTable* blocks,
                                     WorkerRegistry* workers,
                                     HitCounterTable* hits,
                                     uint32_t* existed) noexcept;

}  // namespace kvindexer::absl_rwlock

#endif  // KVINDEXER_BACKENDS_ABSL_RWLOCK_WORKER_REMOVAL_H_
