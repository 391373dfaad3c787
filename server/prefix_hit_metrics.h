// PrefixHitMetrics: how much of the prompt traffic the index could serve
// from cache, counted from every answered MatchExternalKvPrefix
// (docs/metrics.md, "Prefix reuse"):
//   kvindexer_prefix_query_blocks_total
//   kvindexer_prefix_matched_blocks_total
//   kvindexer_prefix_first_block_misses_total
//   kvindexer_prefix_best_match_fraction (histogram)
//   kvindexer_prefix_worker_matched_blocks_total{worker_id,...}
//   kvindexer_prefix_worker_matched_blocks_omitted_total
//
// A query's blocks are its window: its hashes, or the first max_blocks of
// them when max_blocks is set. Its best match is the longest
// matched_prefix_blocks among the answer's matches (0 when there is none:
// a first-block miss). The per-worker counters go to the worker of the best
// match (the first of the answer's matches of that length), for at most
// `worker_series` workers (WorkerMatchCounters).
//
// The indexer only says where the cache is: it never learns which worker
// the router chose, nor whether that worker then served the prefix from
// cache. These figures bound the possible reuse from above.
//
// Record costs three relaxed counter additions, one histogram observation
// and, when there is a match, one WorkerMatchCounters::Add: no lock, and no
// allocation except on a worker's first best match.
//
// Thread safety: Record may be called concurrently, and with scrapes.
#ifndef KVINDEXER_SERVER_PREFIX_HIT_METRICS_H_
#define KVINDEXER_SERVER_PREFIX_HIT_METRICS_H_

#include <cstdint>

#include "common/metrics_registry.h"
#include "core/prefix_answer.h"
#include "server/worker_match_counters.h"

namespace kvindexer {

// The bounds of kvindexer_prefix_best_match_fraction.
inline constexpr double kPrefixMatchFractionBuckets[] = {0,    0.1, 0.25, 0.5,
                                                         0.75, 0.9, 1};

class PrefixHitMetrics {
 public:
  // Registers the series in `registry`, which must outlive this object;
  // this object must outlive every scrape of `registry`.
  PrefixHitMetrics(MetricsRegistry& registry, uint32_t worker_series);
  PrefixHitMetrics(const PrefixHitMetrics&) = delete;
  PrefixHitMetrics& operator=(const PrefixHitMetrics&) = delete;

  // Counts one OK answer to a query whose window is `query_blocks` blocks.
  // REQUIRES: query_blocks > 0.
  void Record(uint32_t query_blocks, const PrefixAnswer& answer);

 private:
  Counter& query_blocks_;
  Counter& matched_blocks_;
  Counter& first_block_misses_;
  Histogram& best_fraction_;
  WorkerMatchCounters workers_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_PREFIX_HIT_METRICS_H_
