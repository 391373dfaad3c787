// BridgeMetrics: the bridge's counters as Prometheus metrics
// (docs/metrics.md, "Bridge"), prefixed kvindexer_bridge_.
//
// BridgeStats (bridge_stats.h) already counts everything, but it belongs
// to the bridge loop thread and is not thread-safe. So the loop publishes a
// copy here now and then (Publish, from the runner's tick), and a scrape
// reads the newest copy under a mutex: nothing is counted twice and the
// loop takes the lock only when it publishes. The live buffer's depth is
// read at scrape time (LiveBuffer is thread-safe).
//
// Thread safety: Publish from the loop thread; the collector from the HTTP
// server's threads.
#ifndef KVINDEXER_BRIDGE_BRIDGE_METRICS_H_
#define KVINDEXER_BRIDGE_BRIDGE_METRICS_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>

#include "bridge/bridge_stats.h"
#include "bridge/live_buffer.h"
#include "common/metrics_registry.h"

namespace kvindexer::bridge {

// How often the loop copies its stats at most: a scrape sees figures at
// most this old (plus one poll interval when idle).
inline constexpr std::chrono::milliseconds kStatsPublishInterval{20};

// Writes every per-stream bridge series of `stats` (all but readiness),
// each carrying `stream` before its own labels: empty in single-worker
// mode, {namespace, worker_id, dp_rank} in multi-stream mode.
void WriteBridgeSeries(MetricsWriter& w, const BridgeStats& stats,
                       size_t buffered_batches, const MetricLabels& stream);

class BridgeMetrics {
 public:
  // Adds the collector to `registry`. REQUIRES: `buffer` and this object
  // outlive every scrape of `registry`.
  BridgeMetrics(MetricsRegistry& registry, const LiveBuffer& buffer);
  BridgeMetrics(const BridgeMetrics&) = delete;
  BridgeMetrics& operator=(const BridgeMetrics&) = delete;

  // Copies `stats` when kStatsPublishInterval has passed since the last
  // copy, or always when `force`.
  void Publish(const BridgeStats& stats,
               std::chrono::steady_clock::time_point now, bool force = false);

  // Readiness (/readyz): set once the bridge is connected to the indexer.
  void SetConnected(bool connected) { connected_.store(connected); }
  // Nullopt when ready: connected, and the last call to the indexer (as of
  // the last published copy) was not refused as unreachable.
  std::optional<std::string> NotReadyReason() const;

 private:
  void Write(MetricsWriter& w) const;

  const LiveBuffer* buffer_;
  std::chrono::steady_clock::time_point last_publish_{};
  std::atomic<bool> connected_{false};
  mutable std::mutex mu_;
  BridgeStats published_;  // guarded by mu_
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_BRIDGE_METRICS_H_
