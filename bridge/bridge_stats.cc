#include "bridge/bridge_stats.h"

#include "absl/strings/str_cat.h"

namespace kvindexer::bridge {

std::string_view MessageSkipReasonName(MessageSkipReason reason) {
  switch (reason) {
    case MessageSkipReason::kFrameCount:
      return "frame_count";
    case MessageSkipReason::kSeqLength:
      return "seq_length";
    case MessageSkipReason::kBadBatch:
      return "bad_batch";
  }
  return "unknown";
}

std::string BridgeStats::FormatLine() const {
  std::string line = absl::StrCat(
      "messages=", messages_received, " batches=", batches_received,
      " events=", events_received, " actions=", actions_applied,
      " hashes=", hashes_applied, " rpcs_sent=", rpcs_sent,
      " rpcs_failed=", rpcs_failed, " reconnects=", reconnects,
      " seq_gaps=", seq_gaps, " seq_missing=", seq_missing,
      " seq_duplicates=", seq_duplicates, " seq_reorders=", seq_reorders);
  line += " events_skipped{";
  bool first = true;
  for (size_t i = 0; i < kEventSkipReasonCount; ++i) {
    if (events_skipped[i] == 0) continue;
    absl::StrAppend(
        &line, first ? "" : ",",
        std::string(EventSkipReasonName(static_cast<EventSkipReason>(i))), "=",
        events_skipped[i]);
    first = false;
  }
  line += "} messages_skipped{";
  first = true;
  for (size_t i = 0; i < kMessageSkipReasonCount; ++i) {
    if (messages_skipped[i] == 0) continue;
    absl::StrAppend(
        &line, first ? "" : ",",
        std::string(MessageSkipReasonName(static_cast<MessageSkipReason>(i))),
        "=", messages_skipped[i]);
    first = false;
  }
  line += "}";
  absl::StrAppend(
      &line, " mode=", server_mode, "/", publisher_mode, " state=", state,
      " degraded=", state.rfind("degraded", 0) == 0 ? 1 : 0,
      " replays=", replays, " replay_pages=", replay_pages,
      " replayed_batches=", replayed_batches, " snapshots=", snapshots,
      " installs=", installs, " probes=", probes, " resyncs=", resyncs,
      " resyncs{snapshot=", resyncs_snapshot,
      ",replay_fold=", resyncs_replay_fold, ",degraded=", resyncs_degraded,
      "} gaps_repaired=", gaps_repaired,
      " restarts_detected=", restarts_detected, " state_losses=", state_losses,
      " overflows=", overflows, " stale_clears=", stale_clears,
      " heartbeats=", heartbeats,
      " heartbeat_probe_failures=", heartbeat_probe_failures);
  return line;
}

}  // namespace kvindexer::bridge
