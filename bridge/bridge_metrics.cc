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

void BridgeMetrics::Write(MetricsWriter& w) const {
  BridgeStats s;
  {
    const std::lock_guard lock(mu_);
    s = published_;
  }
  w.Counter("kvindexer_bridge_messages", "ZMQ messages received, any shape.",
            D(s.messages_received));
  w.Counter("kvindexer_bridge_batches",
            "Messages whose payload decoded as an event batch.",
            D(s.batches_received));
  w.Counter("kvindexer_bridge_events_received",
            "Events in decoded batches, accepted or skipped.",
            D(s.events_received));
  for (size_t k = 0; k < s.events_by_kind.size(); ++k) {
    w.Counter("kvindexer_bridge_events", "Accepted events, by kind.",
              D(s.events_by_kind[k]), {{"kind", kEventKindNames[k]}});
  }
  for (size_t r = 0; r < kEventSkipReasonCount; ++r) {
    w.Counter(
        "kvindexer_bridge_events_skipped", "Events skipped, by reason.",
        D(s.events_skipped[r]),
        {{"reason",
          std::string(EventSkipReasonName(static_cast<EventSkipReason>(r)))}});
  }
  for (size_t r = 0; r < kMessageSkipReasonCount; ++r) {
    w.Counter("kvindexer_bridge_messages_skipped",
              "Whole messages not forwarded, by reason.",
              D(s.messages_skipped[r]),
              {{"reason", std::string(MessageSkipReasonName(
                              static_cast<MessageSkipReason>(r)))}});
  }
  w.Counter("kvindexer_bridge_apply_rpcs",
            "ApplyExternalKvBatch calls the indexer accepted.", D(s.rpcs_sent));
  w.Counter("kvindexer_bridge_actions_applied",
            "Actions in accepted apply calls.", D(s.actions_applied));
  w.Counter("kvindexer_bridge_hashes_applied",
            "Block hashes in accepted apply calls.", D(s.hashes_applied));
  for (size_t c = 0; c < s.rpc_failures_by_code.size(); ++c) {
    w.Counter("kvindexer_bridge_rpc_failures",
              "Apply, heartbeat and snapshot-install calls that failed, by "
              "gRPC status code.",
              D(s.rpc_failures_by_code[c]),
              {{"code", absl::StatusCodeToString(static_cast<absl::StatusCode>(
                            static_cast<int>(c)))}});
  }
  w.Counter("kvindexer_bridge_reconnects",
            "Connection attempts after the first.", D(s.reconnects));
  w.Counter("kvindexer_bridge_sequence_gaps",
            "Gaps in the publisher's sequence numbers.", D(s.seq_gaps));
  w.Counter("kvindexer_bridge_sequence_missing_batches",
            "Batches the gaps skipped over.", D(s.seq_missing));
  w.Counter("kvindexer_bridge_sequence_duplicates",
            "Batches whose sequence number was seen already.",
            D(s.seq_duplicates));
  w.Counter("kvindexer_bridge_sequence_reorders",
            "Batches that arrived out of order.", D(s.seq_reorders));
  w.Counter("kvindexer_bridge_gaps_repaired", "Gaps filled from a replay.",
            D(s.gaps_repaired));
  w.Counter("kvindexer_bridge_replays", "REPLAY requests sent.", D(s.replays));
  w.Counter("kvindexer_bridge_replayed_batches",
            "Batches received in replay replies.", D(s.replayed_batches));
  w.Counter("kvindexer_bridge_replay_pages",
            "Replay requests sent (a replay asks again after dropped "
            "replies).",
            D(s.replay_pages));
  w.Counter("kvindexer_bridge_snapshots",
            "Publisher snapshot fetches that succeeded.", D(s.snapshots));
  w.Counter("kvindexer_bridge_installs",
            "Snapshot installs the indexer accepted.", D(s.installs));
  w.Counter("kvindexer_bridge_probes", "Probes sent.", D(s.probes));
  w.Counter("kvindexer_bridge_resyncs", "Synchronisations completed.",
            D(s.resyncs));
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
              D(o.n), {{"outcome", o.outcome}});
  }
  w.Counter("kvindexer_bridge_restarts_detected",
            "Publisher restarts detected.", D(s.restarts_detected));
  w.Counter("kvindexer_bridge_state_losses",
            "Times the indexer stopped covering this stream.",
            D(s.state_losses));
  w.Counter("kvindexer_bridge_live_buffer_overflows", "Live-buffer overflows.",
            D(s.overflows));
  w.Counter("kvindexer_bridge_stale_clears",
            "Times the worker's placement was cleared because "
            "resynchronisation kept failing.",
            D(s.stale_clears));
  w.Counter("kvindexer_bridge_heartbeats",
            "Heartbeats the indexer answered OK.", D(s.heartbeats));
  w.Counter("kvindexer_bridge_heartbeat_probe_failures",
            "Heartbeats withheld because the worker was unreachable.",
            D(s.heartbeat_probe_failures));
  w.Gauge("kvindexer_bridge_live_buffer_batches",
          "Live batches buffered, waiting for the indexer.",
          D(buffer_->batches()));
  w.Gauge("kvindexer_bridge_degraded",
          "1 while the stream's fidelity is degraded.",
          s.state == "exact" ? 0 : 1);
  w.Gauge("kvindexer_bridge_mode",
          "1 for the current server mode (auto, gated, legacy) and publisher "
          "mode (S, R, L).",
          1, {{"server", s.server_mode}, {"publisher", s.publisher_mode}});
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
