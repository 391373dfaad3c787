// The live loop of StreamRecovery (docs/bridge-events.md, "Recovery >
// Watermarks", "Recovery > Gaps", "Recovery > Publisher restarts",
// "Recovery > Server state loss").
#include "bridge/stream_recovery.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bridge/recovery_requests.h"
#include "bridge/topic_labels.h"
#include "common/log_text.h"
#include "spdlog/spdlog.h"

namespace kvindexer::bridge {
namespace {

std::string_view TopicEpoch(std::string_view topic) {
  return ParseTopicLabels(topic).epoch;
}

StreamRecovery::PublisherMode ModeOf(const RecoveryIo& io) {
  if (io.snapshot != nullptr) return StreamRecovery::PublisherMode::kSnapshot;
  if (io.replay != nullptr) return StreamRecovery::PublisherMode::kReplay;
  return StreamRecovery::PublisherMode::kLive;
}

}  // namespace

RecoveryOptions RecoveryOptionsFromConfig(const BridgeConfig& config) {
  RecoveryOptions options;
  options.header.worker_id = config.worker_id;
  options.header.worker_address = config.worker_address;
  options.header.cache_spec = config.cache_spec;
  options.clear_tiers = config.clear_tiers;
  options.gate = config.sequence_gate;
  options.heartbeat_ttl = config.heartbeat_ttl;
  options.resync_clear_after = config.resync_clear_after;
  return options;
}

std::string_view ServerModeName(StreamRecovery::ServerMode mode) {
  switch (mode) {
    case StreamRecovery::ServerMode::kUndecided:
      return "auto";
    case StreamRecovery::ServerMode::kGated:
      return "gated";
    case StreamRecovery::ServerMode::kLegacy:
      return "legacy";
  }
  return "auto";
}

std::string_view PublisherModeName(StreamRecovery::PublisherMode mode) {
  switch (mode) {
    case StreamRecovery::PublisherMode::kSnapshot:
      return "S";
    case StreamRecovery::PublisherMode::kReplay:
      return "R";
    case StreamRecovery::PublisherMode::kLive:
      return "L";
  }
  return "L";
}

StreamRecovery::StreamRecovery(RecoveryOptions options, RecoveryIo io)
    : options_(std::move(options)),
      io_(std::move(io)),
      header_(options_.header),
      publisher_mode_(ModeOf(io_)),
      server_mode_(options_.gate == SequenceGate::kOff ? ServerMode::kLegacy
                   : options_.gate == SequenceGate::kOn
                       ? ServerMode::kGated
                       : ServerMode::kUndecided),
      rpc_backoff_(options_.rpc_backoff_initial, options_.rpc_backoff_cap),
      sync_backoff_(options_.sync_backoff_initial, options_.sync_backoff_cap) {
  // Legacy mode never clears at start ("Recovery > Legacy mode"): blocks
  // from before the bridge may linger until it clears the worker itself.
  if (server_mode_ == ServerMode::kLegacy) degraded_reason_ = kLegacyNoClear;
  unsynced_since_ = io_.clock->Now();
  SyncModeStats();
}

absl::Status StreamRecovery::Run(const std::function<void()>& on_tick) {
  while (fatal_.ok() && !io_.clock->Stopping()) {
    if (on_tick) on_tick();
    if (io_.take_resync && io_.take_resync()) {
      spdlog::info("the indexer epoch changed; resynchronising");
      RequestSync();
      loss_jitter_pending_ = true;
      SyncStateStats();
    }
    MaybeResyncAfterEviction();
    if (need_sync_) {
      Sync();
      continue;
    }
    std::optional<LiveItem> item = NextItem(options_.poll);
    if (item) HandleItem(*std::move(item));
    ServiceHeartbeat();
    if (!need_sync_ && fatal_.ok()) MaybeIdleProbe();
  }
  return fatal_;
}

std::optional<LiveItem> StreamRecovery::NextItem(
    std::chrono::milliseconds timeout) {
  return io_.live->Pop(timeout);
}

bool StreamRecovery::NoteMarker(const LiveItem& item) {
  switch (item.kind) {
    case LiveItem::Kind::kBatch:
      return false;
    case LiveItem::Kind::kMalformed: {
      // One item may stand for several consecutive malformed messages
      // (LiveBuffer::Push merges them).
      io_.stats->messages_received += item.malformed;
      io_.stats->CountSkippedMessage(MessageSkipReason::kSeqLength,
                                     item.malformed_seq_length);
      io_.stats->CountSkippedMessage(
          MessageSkipReason::kFrameCount,
          item.malformed - item.malformed_seq_length);
      if (auto n = malformed_throttle_.Allow(io_.clock->Now())) {
        spdlog::warn("skipping ZMQ message: {} ({} similar suppressed)",
                     LogText(item.detail, kLogMessageBytes), *n);
      }
      return false;
    }
    case LiveItem::Kind::kOverflow:
      ++io_.stats->overflows;
      spdlog::warn("live buffer full: {} batch(es) from seq={} dropped",
                   item.dropped, item.first_dropped_seq);
      return false;
    case LiveItem::Kind::kDisconnected:
      // Whatever follows may come from a new incarnation: the next
      // synchronisation must not resume in mode L.
      saw_disconnect_ = true;
      reconnect_sync_ = true;
      spdlog::warn("lost the connection to the SGLang publisher");
      return false;
    case LiveItem::Kind::kReaderFailed:
      Fatal(absl::UnavailableError(
                absl::StrCat("the live reader stopped: ", item.detail)),
            "reading the SGLang event stream");
      return false;
    case LiveItem::Kind::kConnected:
      if (!saw_disconnect_) return false;
      saw_disconnect_ = false;
      return true;
  }
  return false;
}

void StreamRecovery::HandleItem(LiveItem item) {
  if (item.kind == LiveItem::Kind::kBatch) {
    ++io_.stats->messages_received;
    HandleBatch(std::move(item.batch));
    return;
  }
  const bool reconnected = NoteMarker(item);
  if (item.kind == LiveItem::Kind::kOverflow) HandleOverflow(item);
  if (reconnected) {
    spdlog::warn(
        "reconnected to the SGLang publisher; resynchronising (a restart may "
        "have been hidden by the reconnect)");
    RequestSync();
  }
}

std::optional<LiveBatch> StreamRecovery::WaitFirstLiveBatch(
    std::optional<std::chrono::milliseconds> limit) {
  const auto start = io_.clock->Now();
  while (fatal_.ok() && !io_.clock->Stopping()) {
    auto timeout = options_.poll;
    if (limit) {
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
          io_.clock->Now() - start);
      if (waited >= *limit) return std::nullopt;
      timeout = std::min(timeout, *limit - waited);
    }
    // A clear that found the server without the stream (a new
    // synchronisation is requested), or that was stopped, ends the wait.
    if (MaybeClearStale() && Interrupted()) return std::nullopt;
    std::optional<LiveItem> item = NextItem(timeout);
    ServiceHeartbeat();
    if (!item) continue;
    if (item->kind == LiveItem::Kind::kBatch) {
      ++io_.stats->messages_received;
      return std::move(item->batch);
    }
    NoteMarker(*item);
  }
  return std::nullopt;
}

void StreamRecovery::HandleBatch(LiveBatch batch) {
  if (saw_disconnect_) {
    // After a disconnect and before the reconnect's synchronisation a
    // batch may come from a new incarnation: classifying it against the
    // old watermarks could repair a "gap" with the new incarnation's
    // replay on top of the old placement. It starts the synchronisation.
    spdlog::warn(
        "live batch seq={} after a lost connection; resynchronising before "
        "using it",
        batch.seq);
    sync_hint_ = std::move(batch);
    RequestSync();
    return;
  }
  const std::string_view epoch = publisher_mode_ == PublisherMode::kSnapshot
                                     ? TopicEpoch(batch.topic)
                                     : std::string_view();
  const LiveVerdict verdict = watermarks_.Classify(batch, epoch);
  spdlog::debug("live seq={} verdict={} applied={} floor={}", batch.seq,
                static_cast<int>(verdict), watermarks_.applied().value_or(0),
                watermarks_.floor().value_or(0));
  switch (verdict) {
    case LiveVerdict::kStale:
      ++io_.stats->seq_duplicates;
      if (auto n = stale_throttle_.Allow(io_.clock->Now())) {
        spdlog::warn(
            "dropping live batch seq={}: not above the last one handled "
            "({}) in epoch {} ({} similar suppressed)",
            batch.seq, watermarks_.floor().value_or(0),
            LogText(watermarks_.epoch()), *n);
      }
      return;
    case LiveVerdict::kOverlap:
      watermarks_.MarkLive(batch.seq);
      return;
    case LiveVerdict::kRestart:
      HandleRestart(std::move(batch));
      return;
    case LiveVerdict::kGap:
      HandleGap(std::move(batch));
      return;
    case LiveVerdict::kUntracked: {
      // Legacy mode before anything was forwarded: the first batch goes
      // through as it is; history before it is unknown.
      const uint64_t seq = batch.seq;
      if (!SendBatch(batch)) return;
      watermarks_.MarkLive(seq);
      if (seq != 0) {
        Degrade({"no_history", absl::StrCat("no history before seq ", seq)});
      }
      return;
    }
    case LiveVerdict::kNext: {
      const uint64_t seq = batch.seq;
      if (SendBatch(batch)) watermarks_.MarkLive(seq);
      return;
    }
  }
}

void StreamRecovery::HandleRestart(LiveBatch batch) {
  ++io_.stats->restarts_detected;
  ++io_.stats->seq_reorders;
  const uint64_t seq = batch.seq;
  if (!gated() && publisher_mode_ != PublisherMode::kSnapshot) {
    spdlog::warn(
        "publisher restarted (seq {} after {}); clearing the worker and "
        "forwarding from the new start",
        seq, watermarks_.floor().value_or(watermarks_.applied().value_or(0)));
    if (!SendSeedEra(ClearRequests(header_, seq, options_.clear_tiers))) {
      return;
    }
    watermarks_.Clear();
    if (!SendBatch(batch)) return;
    watermarks_.MarkLive(seq);
    if (seq == 0) {
      SetExact();
    } else {
      Degrade({"no_history", absl::StrCat("no history before seq ", seq)});
    }
    return;
  }
  spdlog::warn(
      "publisher restarted (live seq {}{}); resynchronising from the new "
      "incarnation",
      seq,
      publisher_mode_ == PublisherMode::kSnapshot
          ? absl::StrCat(", epoch ", LogText(TopicEpoch(batch.topic)),
                         " replaces ", LogText(watermarks_.epoch()))
          : absl::StrCat(" after ", watermarks_.floor().value_or(
                                        watermarks_.applied().value_or(0))));
  restart_known_ = true;
  sync_hint_ = std::move(batch);
  RequestSync();
}

void StreamRecovery::HandleGap(LiveBatch batch) {
  const uint64_t expected = *watermarks_.applied() + 1;
  const uint64_t seq = batch.seq;
  ++io_.stats->seq_gaps;
  io_.stats->seq_missing += seq - expected;
  if (io_.replay != nullptr) {
    spdlog::warn("sequence gap: expected {}, got {}; replaying from {}",
                 expected, seq, expected);
    // Only e..s matter here: no need to page through the whole buffer.
    ReplayResult replay = DoReplay(expected, seq);
    std::vector<LiveBatch> kept;
    // The replay must reach the live batch itself with the same payload:
    // a publisher that restarted after sending it (and published past
    // `expected` again) would otherwise fill the gap with its new
    // incarnation's batches on top of the old one's.
    bool same_incarnation = false;
    for (LiveBatch& b : replay.batches) {
      if (b.seq == seq) same_incarnation = b.payload == batch.payload;
      if (b.seq >= expected && b.seq < seq) kept.push_back(std::move(b));
    }
    if (replay.complete && same_incarnation && !kept.empty() &&
        kept.front().seq == expected && kept.back().seq == seq - 1) {
      for (const LiveBatch& b : kept) {
        if (!SendBatch(b)) return;
      }
      ++io_.stats->gaps_repaired;
      if (SendBatch(batch)) watermarks_.MarkLive(seq);
      return;
    }
    spdlog::warn("replay from {} cannot fill the gap: {}", expected,
                 !replay.complete ? LogText(replay.problem, kLogMessageBytes)
                 : same_incarnation
                     ? std::string("it does not start there")
                     : absl::StrCat("it does not hold live seq ", seq,
                                    " as received (publisher restart?)"));
  }
  if (!gated()) {
    spdlog::warn(
        "sequence gap before seq {} not repaired; clearing the worker and "
        "forwarding from there (degraded)",
        seq);
    if (!SendSeedEra(ClearRequests(header_, seq, options_.clear_tiers))) {
      return;
    }
    if (!SendBatch(batch)) return;
    watermarks_.MarkLive(seq);
    Degrade({"gap_unrepaired",
             absl::StrCat("batches ", expected, "..", seq - 1, " lost")});
    return;
  }
  if (publisher_mode_ != PublisherMode::kLive) {
    spdlog::warn("sequence gap: expected {}, got {}; resynchronising ({})",
                 expected, seq,
                 publisher_mode_ == PublisherMode::kSnapshot
                     ? "new snapshot"
                     : "replay from the incarnation start");
    sync_hint_ = std::move(batch);
    RequestSync();
    return;
  }
  spdlog::warn(
      "sequence gap: expected {}, got {}; no replay: installing from seq {} "
      "(degraded)",
      expected, seq, seq);
  FoldResult fold =
      FoldBatches(std::span<const LiveBatch>(&batch, 1), options_.clear_tiers);
  if (!Install(
          "", seq, fold.placement.ToTierHashes(), {},
          DegradedBy{"gap_unrepaired", absl::StrCat("batches ", expected, "..",
                                                    seq - 1, " lost")})) {
    return;
  }
  CountFoldedLiveBatch(fold);
  watermarks_.MarkLive(seq);
}

void StreamRecovery::HandleOverflow(const LiveItem& item) {
  // A gap at the first dropped batch. It is repaired now rather than when
  // the next batch arrives: the publisher may stay idle, and the dropped
  // batches may have removed blocks the index still holds.
  if (!gated() || !watermarks_.applied()) return;
  const uint64_t applied = *watermarks_.applied();
  if (item.dropped == 0 ||
      item.first_dropped_seq + item.dropped - 1 <= applied) {
    return;
  }
  const uint64_t expected = applied + 1;
  ++io_.stats->seq_gaps;
  if (io_.replay != nullptr) {
    ReplayResult replay = DoReplay(expected);
    if (replay.complete && !replay.batches.empty() &&
        replay.batches.front().seq == expected) {
      for (const LiveBatch& b : replay.batches) {
        if (!SendBatch(b)) return;
      }
      ++io_.stats->gaps_repaired;
      return;
    }
    if (publisher_mode_ != PublisherMode::kLive) {
      spdlog::warn(
          "replay from {} cannot fill the overflow gap ({}); "
          "resynchronising",
          expected,
          replay.complete ? std::string("it does not start there")
                          : LogText(replay.problem, kLogMessageBytes));
      RequestSync();
      return;
    }
  }
  if (publisher_mode_ == PublisherMode::kSnapshot) {
    RequestSync();
    return;
  }
  // Mode L: nothing can restore the dropped batches. An empty install keeps
  // the index a safe lower bound until the next batch (a gap) installs its
  // content.
  spdlog::warn(
      "batches from seq {} were dropped and cannot be replayed; clearing the "
      "worker until the next batch (degraded)",
      item.first_dropped_seq);
  Install("", applied, {}, {},
          DegradedBy{"overflow",
                     absl::StrCat("live batches from seq ",
                                  item.first_dropped_seq, " were dropped")});
}

void StreamRecovery::MaybeIdleProbe() {
  if (!gated() || need_sync_) return;
  const auto now = io_.clock->Now();
  if (now - last_gated_ok_ < options_.probe_interval) return;
  ProbeResult probe = Probe(watermarks_.epoch());
  if (!probe.completed) return;
  CheckServerCheckpoint(probe.checkpoint);
}

void StreamRecovery::CheckServerCheckpoint(std::optional<uint64_t> checkpoint) {
  if (!checkpoint) {
    StateLoss("the server no longer holds a checkpoint for this stream");
    return;
  }
  const uint64_t applied = watermarks_.applied().value_or(0);
  if (*checkpoint < applied) {
    StateLoss(absl::StrCat("the server checkpoint ", *checkpoint,
                           " is behind the last applied seq ", applied));
    return;
  }
  if (*checkpoint > applied) watermarks_.SetApplied(*checkpoint);
}

void StreamRecovery::StateLoss(std::string_view why) {
  ++io_.stats->state_losses;
  spdlog::warn("server state lost: {}; resynchronising",
               LogText(why, kLogMessageBytes));
  RequestSync();
  loss_jitter_pending_ = true;
  SyncStateStats();
}

void StreamRecovery::SwitchToLegacy(const absl::Status& status) {
  spdlog::warn(
      "the indexer has no sequence gate ({}); continuing in legacy mode "
      "(seed-era applies, no server restart detection)",
      LogText(status.ToString(), kLogMessageBytes));
  server_mode_ = ServerMode::kLegacy;
  watermarks_.Clear();
  RequestSync();
  SyncModeStats();
  Degrade(LegacyNoClear());
}

void StreamRecovery::Fatal(absl::Status status, std::string_view what) {
  spdlog::error("{} failed with a permanent error: {}", what,
                LogText(status.ToString(), kLogMessageBytes));
  fatal_ = std::move(status);
}

StreamRecovery::DegradedBy StreamRecovery::LegacyNoClear() {
  return {kLegacyNoClear,
          "legacy mode: blocks reported before the bridge started are not "
          "cleared"};
}

void StreamRecovery::Degrade(const DegradedBy& by) {
  if (degraded_reason_ != by.reason) {
    spdlog::warn("worker index degraded ({}): {}; {}", by.reason,
                 LogText(by.message, kLogMessageBytes),
                 by.reason == kLegacyNoClear
                     ? "it may hold blocks the worker no longer has until "
                       "the bridge clears the worker at an incarnation start"
                     : "it holds a safe subset of the worker's cache until "
                       "the next exact resynchronisation");
  }
  degraded_reason_ = by.reason;
  SyncStateStats();
}

void StreamRecovery::SetExact() {
  if (!degraded_reason_.empty()) {
    spdlog::info("worker index exact again (was degraded: {})",
                 degraded_reason_);
  }
  degraded_reason_.clear();
  SyncStateStats();
}

void StreamRecovery::SyncStateStats() {
  if (need_sync_) {
    io_.stats->state = "syncing";
  } else if (degraded_reason_.empty()) {
    io_.stats->state = "exact";
  } else {
    io_.stats->state = absl::StrCat("degraded(", degraded_reason_, ")");
  }
}

void StreamRecovery::RequestSync() {
  if (!need_sync_) unsynced_since_ = io_.clock->Now();
  need_sync_ = true;
  sync_requested_ = true;
}

bool StreamRecovery::Interrupted() {
  return sync_requested_ || !fatal_.ok() || io_.clock->Stopping();
}

void StreamRecovery::SyncModeStats() {
  io_.stats->server_mode = std::string(ServerModeName(server_mode_));
  io_.stats->publisher_mode = std::string(PublisherModeName(publisher_mode_));
}

}  // namespace kvindexer::bridge
