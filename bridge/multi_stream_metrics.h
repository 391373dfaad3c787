// The metrics of a multi-stream bridge (docs/metrics.md, "Bridge metrics"):
// every per-stream series once per stream with the labels namespace,
// worker_id and dp_rank, and kvindexer_bridge_streams{state} counting the
// streams as syncing, exact, degraded or parked.
//
// Thread safety: pure functions over copies the caller took.
#ifndef KVINDEXER_BRIDGE_MULTI_STREAM_METRICS_H_
#define KVINDEXER_BRIDGE_MULTI_STREAM_METRICS_H_

#include <cstddef>
#include <span>
#include <string_view>

#include "bridge/bridge_stats.h"
#include "bridge/workers_json.h"
#include "common/metrics_writer.h"

namespace kvindexer::bridge {

// One stream as the collector sees it.
struct StreamView {
  const WorkerEntry* entry = nullptr;
  BridgeStats stats;
  size_t buffered_batches = 0;
  bool parked = false;
};

// "parked", "syncing", "exact" or "degraded".
std::string_view StreamStateName(bool parked, std::string_view stats_state);

void WriteMultiStreamSeries(MetricsWriter& w,
                            std::span<const StreamView> streams);

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_MULTI_STREAM_METRICS_H_
