#include "bridge/batch_processor.h"

#include <string>

#include "bridge/frame_parser.h"
#include "spdlog/spdlog.h"

namespace kvindexer::bridge {

BatchProcessor::BatchProcessor(const BridgeConfig& config, BridgeStats* stats,
                               ChunkLimits limits)
    : header_{config.worker_id, config.worker_address, config.cache_spec},
      clear_tiers_(config.clear_tiers),
      limits_(limits),
      stats_(stats) {}

absl::Status BatchProcessor::HandleMessage(
    std::span<const std::string_view> frames, KvApplier* applier) {
  const auto now = LogThrottle::Clock::now();
  ++stats_->messages_received;
  absl::StatusOr<LiveMessage> message = ParseLiveMessage(frames);
  if (!message.ok()) {
    const MessageSkipReason reason = frames.size() == 2 || frames.size() == 3
                                         ? MessageSkipReason::kSeqLength
                                         : MessageSkipReason::kFrameCount;
    stats_->CountSkippedMessage(reason);
    if (auto suppressed =
            message_throttles_[static_cast<size_t>(reason)].Allow(now)) {
      spdlog::warn("skipping ZMQ message: {} ({} similar suppressed)",
                   std::string(message.status().message()), *suppressed);
    }
    return absl::OkStatus();
  }

  const SequenceTracker::Observation seq = sequence_.Observe(message->seq, now);
  SyncSequenceStats();
  if (seq.log_now) {
    spdlog::warn(
        "sequence {} is not contiguous; this build does not recover the gap "
        "(expected {}, {} batches skipped over, {} similar warnings "
        "suppressed)",
        message->seq, seq.expected, seq.missing, seq.suppressed);
  }

  absl::Status decoded = decoder_.Decode(message->payload, &batch_);
  if (!decoded.ok()) {
    stats_->CountSkippedMessage(MessageSkipReason::kBadBatch);
    if (auto suppressed = message_throttles_[static_cast<size_t>(
                                                 MessageSkipReason::kBadBatch)]
                              .Allow(now)) {
      spdlog::warn(
          "skipping undecodable batch seq={}: {} ({} similar "
          "suppressed)",
          message->seq, std::string(decoded.message()), *suppressed);
    }
    return absl::OkStatus();
  }
  ++stats_->batches_received;
  stats_->events_received += batch_.event_count;
  LogSkippedEvents(message->seq);

  BuildActions(batch_, clear_tiers_, &actions_);
  std::vector<kv_indexer::v1::ApplyExternalKvBatchRequest> requests =
      ChunkActions(actions_, header_, message->seq, limits_);
  for (size_t i = 0; i < requests.size(); ++i) {
    kv_indexer::v1::ApplyExternalKvBatchResponse response;
    absl::Status status = applier->Apply(requests[i], &response);
    if (!status.ok()) {
      ++stats_->rpcs_failed;
      spdlog::warn(
          "apply RPC {}/{} of batch seq={} failed: {}; the remaining {} "
          "chunk(s) of this batch are dropped",
          i + 1, requests.size(), message->seq, status.ToString(),
          requests.size() - i - 1);
      return status;
    }
    ++stats_->rpcs_sent;
    uint64_t hashes = 0;
    for (const auto& action : requests[i].actions()) {
      hashes += static_cast<uint64_t>(action.hashes_size());
    }
    stats_->actions_applied +=
        static_cast<uint64_t>(requests[i].actions_size());
    stats_->hashes_applied += hashes;
    spdlog::debug("batch seq={} chunk {}/{} applied: {} actions, {} hashes",
                  message->seq, i + 1, requests.size(),
                  requests[i].actions_size(), hashes);
  }
  return absl::OkStatus();
}

void BatchProcessor::LogSkippedEvents(uint64_t seq) {
  const auto now = LogThrottle::Clock::now();
  for (const SkippedEvent& skipped : batch_.skipped) {
    stats_->CountSkippedEvent(skipped.reason);
    if (skipped.reason == EventSkipReason::kUnknownTag) {
      spdlog::debug("batch seq={} event {}: {}", seq, skipped.index,
                    skipped.detail);
      continue;
    }
    if (auto suppressed =
            event_throttles_[static_cast<size_t>(skipped.reason)].Allow(now)) {
      spdlog::warn(
          "skipping event {} of batch seq={} ({}): {} ({} similar "
          "suppressed)",
          skipped.index, seq, std::string(EventSkipReasonName(skipped.reason)),
          skipped.detail, *suppressed);
    }
  }
}

void BatchProcessor::SyncSequenceStats() {
  stats_->seq_gaps = sequence_.gaps();
  stats_->seq_missing = sequence_.missing_batches();
  stats_->seq_duplicates = sequence_.duplicates();
  stats_->seq_reorders = sequence_.reorders();
}

}  // namespace kvindexer::bridge
