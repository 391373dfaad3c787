// Phase "visibility" of kv-indexer-fleet-bench: the delay from "a bridge
// has a batch" (LogApplier::Apply called, fleet_traffic.h) to "every
// replica answers queries with it" (docs/fleet.md, "Replicas follow the
// log"), at a steady event rate. One poller per replica asks
// MatchExternalKv, in one call, for the last hash of every batch it has not
// seen yet; a batch is visible on a replica at the moment the first answer
// that holds its hash arrives, so each figure includes up to one poll round
// trip and up to one gap between polls.
#ifndef KVINDEXER_BENCH_FLEET_VISIBILITY_H_
#define KVINDEXER_BENCH_FLEET_VISIBILITY_H_

#include <chrono>
#include <cstdint>
#include <vector>

#include "fleet/event_log.h"
#include "fleet_traffic.h"
#include "latency_recorder.h"
#include "load_client.h"

namespace kvindexer::bench {

struct VisibilityFigures {
  PacedAppendResult append;
  LatencySummary visible_all;  // Apply called -> visible on every replica
  std::vector<LatencySummary> visible_each;  // per replica
  uint64_t invisible = 0;  // batches some replica never showed in time
  uint64_t polls = 0;      // MatchExternalKv calls, all pollers
};

// Appends `options.max_batches` batches and waits (bounded) until every
// replica shows each of them. REQUIRES: options.max_batches > 0.
[[nodiscard]] VisibilityFigures MeasureVisibility(
    fleet::EventLog& log, const std::vector<ChannelPool*>& replicas,
    const PacedAppendOptions& options, std::chrono::microseconds poll_gap);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_FLEET_VISIBILITY_H_
