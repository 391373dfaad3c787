// Counters of one bridge process and the periodic INFO stats line.
//
// Thread safety: not thread-safe; owned by the bridge loop thread.
#ifndef KVINDEXER_BRIDGE_BRIDGE_STATS_H_
#define KVINDEXER_BRIDGE_BRIDGE_STATS_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "bridge/kv_events.h"

namespace kvindexer::bridge {

// Why a whole ZMQ message was not forwarded.
enum class MessageSkipReason : uint8_t {
  kFrameCount,  // not 2 or 3 frames
  kSeqLength,   // sequence frame not 8 bytes
  kBadBatch,    // payload undecodable / bad envelope
};
inline constexpr size_t kMessageSkipReasonCount = 3;
std::string_view MessageSkipReasonName(MessageSkipReason reason);

struct BridgeStats {
  uint64_t messages_received = 0;  // ZMQ messages, any shape
  uint64_t batches_received = 0;   // messages whose payload decoded
  uint64_t events_received = 0;    // events in decoded batches
  uint64_t actions_applied = 0;    // actions in successful RPCs
  uint64_t hashes_applied = 0;     // hashes in successful RPCs
  uint64_t rpcs_sent = 0;          // successful apply RPCs
  uint64_t rpcs_failed = 0;
  uint64_t reconnects = 0;  // connection attempts after the first
  uint64_t seq_gaps = 0;
  uint64_t seq_missing = 0;  // batches the gaps skipped over
  uint64_t seq_duplicates = 0;
  uint64_t seq_reorders = 0;
  std::array<uint64_t, kEventSkipReasonCount> events_skipped{};
  std::array<uint64_t, kMessageSkipReasonCount> messages_skipped{};
  // For the metrics (docs/metrics.md): accepted events by EventKind, and
  // failed RPCs by gRPC status code (0..16; rpcs_failed is their sum).
  std::array<uint64_t, 3> events_by_kind{};
  std::array<uint64_t, 17> rpc_failures_by_code{};
  // The last call to the indexer failed as unreachable (UNAVAILABLE or
  // DEADLINE_EXCEEDED) and none has succeeded since: /readyz says so.
  bool indexer_unreachable = false;

  // Recovery (docs/bridge-events.md, "Recovery > Stats"). `server_mode` is
  // auto (not decided yet), gated or legacy; `publisher_mode` S, R or L.
  // `state` is "exact" or "degraded(<reason>)".
  std::string server_mode = "auto";
  std::string publisher_mode = "L";
  std::string state = "exact";
  uint64_t replays = 0;           // REPLAY requests
  uint64_t replayed_batches = 0;  // batches received in replies
  uint64_t replay_pages = 0;      // requests the replays took
  uint64_t snapshots = 0;         // snapshot fetches that succeeded
  uint64_t installs = 0;          // INSTALLs that succeeded
  uint64_t probes = 0;            // PROBEs sent
  uint64_t resyncs = 0;           // initial synchronisations completed
  // ... of which: an exact install of a publisher snapshot; an exact
  // install of a fold of replayed (or first live) batches; ended degraded.
  // The rest resumed from the server's checkpoint or installed nothing.
  uint64_t resyncs_snapshot = 0;
  uint64_t resyncs_replay_fold = 0;
  uint64_t resyncs_degraded = 0;
  uint64_t gaps_repaired = 0;  // gaps filled from a replay
  uint64_t restarts_detected = 0;
  uint64_t state_losses = 0;  // the server stopped covering the stream
  uint64_t overflows = 0;     // live-buffer overflows
  // Placements cleared because resynchronisation kept failing.
  uint64_t stale_clears = 0;
  // The indexer's placement bound: answers that said the stream's
  // placements were evicted, and the resyncs they started.
  uint64_t evictions_reported = 0;
  uint64_t eviction_resyncs = 0;
  // Worker liveness ("Recovery > Worker liveness").
  uint64_t heartbeats = 0;                // heartbeats the server answered OK
  uint64_t heartbeat_probe_failures = 0;  // worker unreachable: no heartbeat

  void CountSkippedEvent(EventSkipReason r) {
    ++events_skipped[static_cast<size_t>(r)];
  }
  void CountSkippedMessage(MessageSkipReason r, uint64_t n = 1) {
    messages_skipped[static_cast<size_t>(r)] += n;
  }
  // A call to the indexer was answered.
  void NoteIndexerReached() { indexer_unreachable = false; }
  void CountRpcFailure(int code) {
    ++rpcs_failed;
    ++rpc_failures_by_code[code >= 0 && code < 17 ? code : 2];  // 2: UNKNOWN
    if (code == 4 || code == 14) indexer_unreachable = true;
  }

  // "messages=.. batches=.. events=.. actions=.. hashes=.. rpcs_sent=..
  //  rpcs_failed=.. reconnects=.. seq_gaps=.. seq_missing=..
  //  seq_duplicates=.. seq_reorders=.. events_skipped{reason=n,..}
  //  messages_skipped{reason=n,..} mode=<server>/<publisher> state=..
  //  degraded=0|1
  //  replays=.. replay_pages=.. replayed_batches=.. snapshots=..
  //  installs=.. probes=..
  //  resyncs=.. resyncs{snapshot=..,replay_fold=..,degraded=..}
  //  gaps_repaired=.. restarts_detected=.. state_losses=.. overflows=..
  //  stale_clears=.. heartbeats=.. heartbeat_probe_failures=.." with only
  //  non-zero skip reasons listed (the three resync kinds always are).
  std::string FormatLine() const;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_BRIDGE_STATS_H_
