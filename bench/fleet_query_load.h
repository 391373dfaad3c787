// Phase "queries" of kv-indexer-fleet-bench: MatchExternalKvPrefix against
// one replica (load_client.h, closed loop) while the log is quiet and while
// bridges append at a steady rate that the replica reads and applies
// (fleet_traffic.h), in alternating rounds. The queries are prefixes of
// batches already in the log, so every answer matches.
#ifndef KVINDEXER_BENCH_FLEET_QUERY_LOAD_H_
#define KVINDEXER_BENCH_FLEET_QUERY_LOAD_H_

#include <cstdint>
#include <vector>

#include "fleet/event_log.h"
#include "fleet_traffic.h"
#include "load_client.h"

namespace kvindexer::bench {

struct QueryPoolOptions {
  uint64_t seed = 1;
  uint32_t workers = 8;
  uint64_t batches_per_worker = 1;  // batches 0.. of each worker are held
  uint32_t batch_hashes = 16384;
  uint32_t min_blocks = 32;
  uint32_t max_blocks = 512;
  uint32_t pool = 1024;
};

// Prefixes of the batches BulkAppend wrote with the same seed and sizes.
std::vector<v1::MatchExternalKvPrefixRequest> MakeFleetQueries(
    const QueryPoolOptions& options);

struct QueryRound {
  bool appending = false;
  QueryResult queries;
  PacedAppendResult append;  // when appending
};

// `rounds` pairs of runs: quiet, then with `append` running (its
// max_batches and stop are set here; first_index advances per round).
[[nodiscard]] std::vector<QueryRound> MeasureQueriesUnderAppends(
    ChannelPool* replica, fleet::EventLog& log,
    const std::vector<v1::MatchExternalKvPrefixRequest>& queries,
    const QueryLoad& load, PacedAppendOptions append, uint32_t rounds);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_FLEET_QUERY_LOAD_H_
