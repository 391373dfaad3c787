#include "server/prefix_hit_metrics.h"

#include <string>
#include <utility>
#include <vector>

namespace kvindexer {

PrefixHitMetrics::PrefixHitMetrics(MetricsRegistry& registry,
                                   uint32_t worker_series)
    : query_blocks_(registry.AddCounter(
          "kvindexer_prefix_query_blocks",
          "Blocks in the windows of answered prefix queries.")),
      matched_blocks_(registry.AddCounter(
          "kvindexer_prefix_matched_blocks",
          "Blocks of the best match of answered prefix queries: an upper "
          "bound of the blocks that could be served from cache.")),
      first_block_misses_(registry.AddCounter(
          "kvindexer_prefix_first_block_misses",
          "Answered prefix queries with no match: no worker holds block 0.")),
      best_fraction_(registry.AddHistogram(
          "kvindexer_prefix_best_match_fraction",
          "Per answered prefix query, its best match's blocks over its "
          "window's blocks.",
          kPrefixMatchFractionBuckets)),
      workers_(worker_series) {
  registry.AddCollector([this](MetricsWriter& w) {
    constexpr std::string_view kHelp =
        "Blocks of the best matches a worker had, for the first "
        "KV_INDEXER_METRICS_WORKER_SERIES workers to have one.";
    for (const WorkerMatchCounters::Entry& e : workers_.Read()) {
      MetricLabels labels = {{"worker_id", e.worker_id}};
      if (e.stream) {
        labels.emplace_back("namespace", e.ns);
        labels.emplace_back("dp_rank", std::to_string(e.dp_rank));
      }
      w.Counter("kvindexer_prefix_worker_matched_blocks", kHelp,
                static_cast<double>(e.value), std::move(labels));
    }
    w.Counter("kvindexer_prefix_worker_matched_blocks_omitted",
              "Blocks of the best matches of workers left without a series "
              "of their own by KV_INDEXER_METRICS_WORKER_SERIES.",
              static_cast<double>(workers_.omitted()));
  });
}

void PrefixHitMetrics::Record(uint32_t query_blocks,
                              const PrefixAnswer& answer) {
  const PrefixMatchView* best = nullptr;
  for (const PrefixMatchView& match : answer.matches) {
    if (best == nullptr ||
        match.matched_prefix_blocks > best->matched_prefix_blocks) {
      best = &match;
    }
  }
  const uint32_t best_blocks =
      best != nullptr ? best->matched_prefix_blocks : 0;
  query_blocks_.Increment(query_blocks);
  matched_blocks_.Increment(best_blocks);
  if (best_blocks == 0) first_block_misses_.Increment();
  best_fraction_.Observe(query_blocks == 0
                             ? 0.0
                             : static_cast<double>(best_blocks) /
                                   static_cast<double>(query_blocks));
  if (best_blocks == 0) return;
  WorkerMatchKey key;
  key.worker_id = best->worker_id;
  if (best->stream != nullptr) {
    key.stream = true;
    key.ns = best->stream->ns;
    key.dp_rank = best->stream->dp_rank;
  }
  workers_.Add(key, best_blocks);
}

}  // namespace kvindexer
