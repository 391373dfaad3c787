// WorkerDirectory: the operator's copy of every worker record, kept apart
// from the records the Indexer decides with, so that listings, counts and
// lookups for the admin API and the metrics never wait for a mutation and a
// mutation never waits for a listing longer than one bounded page.
//
// The Indexer publishes into it before it releases its mutation mutex: each
// mutation's changed workers (new snapshots, erased ids) in one Publish. A
// reader therefore sees every mutation whole or not at all per worker, and
// a listing assembled page by page is made of per-worker snapshots each
// taken at the end of some mutation (a worker may change between pages).
//
// Cost: the directory holds one WorkerSnapshot per worker (no placement
// counts); Publish is O(changed workers × log n); a page is O(limit ×
// log n); counts are kept as the entries change, so counts() is O(1).
//
// Thread safety: every method may be called concurrently. Publish is
// serialised by the caller (the Indexer's mutation mutex); readers hold the
// directory's own mutex for at most one page.
#ifndef KVINDEXER_CORE_WORKER_DIRECTORY_H_
#define KVINDEXER_CORE_WORKER_DIRECTORY_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/stream_key.h"
#include "core/worker_snapshot.h"

namespace kvindexer {

// The workers with a host record, counted by state.
struct WorkerCounts {
  uint64_t total = 0;
  uint64_t ready = 0;
  // Ready and, for a namespaced stream, with an epoch and a generation
  // (WorkerRecord::covered).
  uint64_t covered = 0;
  uint64_t sequenced = 0;
  uint64_t configured = 0;
  // Marked by a heartbeat (a deadline is set).
  uint64_t heartbeating = 0;
  // Marked evicted by the placement bound (WorkerRecord::evicted).
  uint64_t evicted = 0;
  // Indexed by Fidelity (unknown, exact, degraded).
  std::array<uint64_t, 3> by_fidelity{};

  bool operator==(const WorkerCounts&) const = default;
};

class WorkerDirectory {
 public:
  // Replaces the entries of `changed` (each keyed by its worker_id) and
  // drops those of `erased` (an id without an entry is ignored). An id must
  // not be in both.
  void Publish(std::vector<WorkerSnapshot> changed,
               const std::vector<std::string>& erased);

  // The entry of `worker_id`; nullopt when it has none.
  std::optional<WorkerSnapshot> Find(std::string_view worker_id) const;
  // Up to `limit` entries whose ids sort after `after` in key order
  // (StreamIdOrder: bytewise by namespace, worker id, rank; "" is before
  // every id), in that order. Fewer than `limit` means there are no more.
  // REQUIRES: limit > 0.
  std::vector<WorkerSnapshot> Page(std::string_view after, size_t limit) const;
  WorkerCounts counts() const;

 private:
  void Count(const WorkerSnapshot& w, int64_t sign);

  mutable std::mutex mu_;
  std::map<std::string, WorkerSnapshot, StreamIdOrder> entries_;  // guarded
  WorkerCounts counts_;                                           // guarded
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_WORKER_DIRECTORY_H_
