#include "bridge/bridge_metrics.h"

#include <string>

#include "absl/status/status.h"

namespace kvindexer::bridge {
namespace {

constexpr const char* kEventKindNames[] = {"store", "remove", "clear"};

double D(uint64_t v) { return static_cast<double>(v); }

}  // namespace

BridgeMetrics::BridgeMetrics(MetricsRegistry& registry,
                             const LiveBuffer& buffer)
    : buffer_(&buffer) {
  registry.AddCollector([this](MetricsWriter& w) { Write(w); });
}

void BridgeMetrics::Publish(const BridgeStats& stats,
                            std::chrono::steady_clock::time_point now,
                            bool force) {
  if (!force && now - last_publish_ < kStatsPublishInterval) return;
  last_publish_ = now;
  const std::lock_guard lock(mu_);
  published_ = stats;
}

void WriteBridgeSeries(MetricsWriter& w, const BridgeStats& s,
                       size_t buffered_batches, const MetricLabels& stream) {
  // `stream` first, then the series' own labels.
  auto L = [&stream](MetricLabels own) {
    MetricLabels all = stream;
    all.insert(all.end(), own.begin(), own.end());
    return all;
  };
  w.Counter("kvindexer_bridge_messages", "ZMQ messages received, any shape.",
            D(s.messages_received), stream);
  w.Counter("kvindexer_bridge_batches",
            "Messages whose payload decoded as an event batch.",
            D(s.batches_received), stream);
  w.Counter("kvindexer_bridge_events_received",
            "Events in decoded batches, accepted or skipped.",
            D(s.events_received), stream);
  for (size_t k = 0; k < s.events_by_kind.size(); ++k) {
    w.Counter("kvindexer_bridge_events", "Accepted events, by kind.",
              D(s.events_by_kind[k]), L({{"kind", kEventKindNames[k]}}));
  }
  for (size_t r = 0; r < kEventSkipReasonCount; ++r) {
    w.Counter("kvindexer_bridge_events_skipped", "Events skipped, by reason.",
              D(s.events_skipped[r]),
              L({{"reason", std::string(EventSkipReasonName(
                                static_cast<EventSkipReason>(r)))}}));
  }
  for (size_t r = 0; r < kMessageSkipReasonCount; ++r) {
    w.Counter("kvindexer_bridge_messages_skipped",
              "Whole messages not forwarded, by reason.",
              D(s.messages_skipped[r]),
              L({{"reason", std::string(MessageSkipReasonName(
                                static_cast<MessageSkipReason>(r)))}}));
  }
  w.Counter("kvindexer_bridge_apply_rpcs",
            "ApplyExternalKvBatch calls the indexer accepted.", D(s.rpcs_sent),
            stream);
  w.Counter("kvindexer_bridge_actions_applied",
            "Actions in accepted apply calls.", D(s.actions_applied), stream);
  w.Counter("kvindexer_bridge_hashes_applied",
            "Block hashes in accepted apply calls.", D(s.hashes_applied),
            stream);
  for (size_t c = 0; c < s.rpc_failures_by_code.size(); ++c) {
    w.Counter(
        "kvindexer_bridge_rpc_failures",
        "Apply, heartbeat and snapshot-install calls that failed, by "
        "gRPC status code.",
        D(s.rpc_failures_by_code[c]),
        L({{"code", absl::StatusCodeToString(
                        static_cast<absl::StatusCode>(static_cast<int>(c)))}}));
  }
  w.Counter("kvindexer_bridge_reconnects",
            "Connection attempts after the first.", D(s.reconnects), stream);
  w.Counter("kvindexer_bridge_sequence_gaps",
            "Gaps in the publisher's sequence numbers.", D(s.seq_gaps), stream);
  w.Counter("kvindexer_bridge_sequence_missing_batches",
            "Batches the gaps skipped over.", D(s.seq_missing), stream);
  w.Counter("kvindexer_bridge_sequence_duplicates",
            "Batches whose sequence number was seen already.",
            D(s.seq_duplicates), stream);
  w.Counter("kvindexer_bridge_sequence_reorders",
            "Batches that arrived out of order.", D(s.seq_reorders), stream);
  w.Counter("kvindexer_bridge_gaps_repaired", "Gaps filled from a replay.",
            D(s.gaps_repaired), stream);
  w.Counter("kvindexer_bridge_replays", "REPLAY requests sent.", D(s.replays),
            stream);
  w.Counter("kvindexer_bridge_replayed_batches",
            "Batches received in replay replies.", D(s.replayed_batches),
            stream);
  w.Counter("kvindexer_bridge_replay_pages",
            "Replay requests sent (a replay asks again after dropped "
            "replies).",
            D(s.replay_pages), stream);
  w.Counter("kvindexer_bridge_snapshots",
            "Publisher snapshot fetches that succeeded.", D(s.snapshots),
            stream);
  w.Counter("kvindexer_bridge_installs",
            "Snapshot installs the indexer accepted.", D(s.installs), stream);
  w.Counter("kvindexer_bridge_probes", "Probes sent.", D(s.probes), stream);
  w.Counter("kvindexer_bridge_resyncs", "Synchronisations completed.",
            D(s.resyncs), stream);
  const struct {
    const char* outcome;
    uint64_t n;
  } outcomes[] = {{"snapshot", s.resyncs_snapshot},
                  {"replay_fold", s.resyncs_replay_fold},
                  {"degraded", s.resyncs_degraded}};
  for (const auto& o : outcomes) {
    w.Counter("kvindexer_bridge_resync_outcomes",
              "Synchronisations by how they ended (the rest resumed or "
              "installed nothing).",
              D(o.n), L({{"outcome", o.outcome}}));
  }
  w.Counter("kvindexer_bridge_restarts_detected",
            "Publisher restarts detected.", D(s.restarts_detected), stream);
  w.Counter("kvindexer_bridge_state_losses",
            "Times the indexer stopped covering this stream.",
            D(s.state_losses), stream);
  w.Counter("kvindexer_bridge_live_buffer_overflows", "Live-buffer overflows.",
            D(s.overflows), stream);
  w.Counter("kvindexer_bridge_stale_clears",
            "Times the worker's placement was cleared because "
            "resynchronisation kept failing.",
            D(s.stale_clears), stream);
  w.Counter("kvindexer_bridge_evictions_reported",
            "Indexer answers saying its placement bound evicted placements "
            "of this stream.",
            D(s.evictions_reported), stream);
  w.Counter("kvindexer_bridge_eviction_resyncs",
            "Resynchronisations (a whole snapshot) started because the "
            "indexer evicted placements of this stream.",
            D(s.eviction_resyncs), stream);
  w.Counter("kvindexer_bridge_heartbeats",
            "Heartbeats the indexer answered OK.", D(s.heartbeats), stream);
  w.Counter("kvindexer_bridge_heartbeat_probe_failures",
            "Heartbeats withheld because the worker was unreachable.",
            D(s.heartbeat_probe_failures), stream);
  w.Gauge("kvindexer_bridge_live_buffer_batches",
          "Live batches buffered, waiting for the indexer.",
          D(buffered_batches), stream);
  w.Gauge("kvindexer_bridge_degraded",
          "1 while the stream's fidelity is degraded.",
          s.state == "exact" ? 0 : 1, stream);
  w.Gauge("kvindexer_bridge_mode",
          "1 for the current server mode (auto, gated, legacy) and publisher "
          "mode (S, R, L).",
          1, L({{"server", s.server_mode}, {"publisher", s.publisher_mode}}));
}

void BridgeMetrics::Write(MetricsWriter& w) const {
  BridgeStats s;
  {
    const std::lock_guard lock(mu_);
    s = published_;
  }
  WriteBridgeSeries(w, s, buffer_->batches(), {});
}

std::optional<std::string> BridgeMetrics::NotReadyReason() const {
  if (!connected_.load()) return "not connected to the indexer";
  std::lock_guard<std::mutex> lock(mu_);
  if (published_.indexer_unreachable) {
    return "the indexer is unreachable: the last call failed with "
           "UNAVAILABLE or DEADLINE_EXCEEDED";
  }
  return std::nullopt;
}

}  // namespace kvindexer::bridge
