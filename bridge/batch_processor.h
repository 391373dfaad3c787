// Handles one ZMQ live message end to end: frames -> sequence check ->
// decode -> actions -> chunks -> apply RPCs in order (docs/bridge-events.md,
// "Role of the bridge", "Building actions" and "Chunking"). Stops at the
// first failed RPC; earlier chunks stay applied and the
// rest of the batch is dropped.
//
// Thread safety: not thread-safe; one per bridge loop.
#ifndef KVINDEXER_BRIDGE_BATCH_PROCESSOR_H_
#define KVINDEXER_BRIDGE_BATCH_PROCESSOR_H_

#include <array>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "bridge/action_builder.h"
#include "bridge/bridge_config.h"
#include "bridge/bridge_stats.h"
#include "bridge/chunker.h"
#include "bridge/event_decoder.h"
#include "bridge/kv_applier.h"
#include "bridge/log_throttle.h"
#include "bridge/sequence_tracker.h"

namespace kvindexer::bridge {

class BatchProcessor {
 public:
  // `stats` must outlive the processor.
  BatchProcessor(const BridgeConfig& config, BridgeStats* stats,
                 ChunkLimits limits = {});

  // Returns OK when the message was forwarded or skipped (malformed frames,
  // undecodable batch, no actions). Returns the failing RPC's status when an
  // apply failed; the caller classifies it.
  [[nodiscard]] absl::Status HandleMessage(
      std::span<const std::string_view> frames, KvApplier* applier);

 private:
  void LogSkippedEvents(uint64_t seq);
  void SyncSequenceStats();

  ApplyHeader header_;
  std::vector<Tier> clear_tiers_;
  ChunkLimits limits_;
  BridgeStats* stats_;
  EventDecoder decoder_;
  DecodedBatch batch_;
  ActionList actions_;
  SequenceTracker sequence_;
  std::array<LogThrottle, kEventSkipReasonCount> event_throttles_;
  std::array<LogThrottle, kMessageSkipReasonCount> message_throttles_;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_BATCH_PROCESSOR_H_
