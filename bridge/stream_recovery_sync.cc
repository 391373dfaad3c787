// The initial synchronisation of StreamRecovery, per mode
// (docs/bridge-events.md, "Recovery > Initial synchronisation"): snapshot
// cycle (S), replay from the incarnation start (R), first live batch (L),
// and the legacy variants.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bridge/recovery_requests.h"
#include "bridge/stream_recovery.h"
#include "bridge/topic_labels.h"
#include "common/log_text.h"
#include "spdlog/spdlog.h"

namespace kvindexer::bridge {

void StreamRecovery::Sync() {
  // need_sync_ stays set until the attempt succeeds: a stop, a failure or a
  // new request leaves the stream unsynchronised and the next Run() retries.
  io_.stats->state = "syncing";
  sync_requested_ = false;
  sync_installed_ = false;
  if (loss_jitter_pending_) {
    const uint64_t span =
        static_cast<uint64_t>(options_.loss_jitter_max.count()) + 1;
    const auto jitter = std::chrono::milliseconds(io_.random() % span);
    if (io_.clock->WaitFor(jitter)) return;
    loss_jitter_pending_ = false;
  }
  if (io_.before_sync) {
    absl::Status checked = io_.before_sync();
    if (!checked.ok()) {
      fatal_ = std::move(checked);
      return;
    }
  }
  // A Configure that listed the stream created its record; without one (a
  // single-worker bridge), or when the indexer refused the process's list,
  // the stream registers alone, so that an entry the indexer refuses parks
  // only its own stream.
  const bool configured =
      io_.configure && io_.configure(header_.worker_generation);
  if (gated() && !configured && !Register()) return;
  bool done = false;
  switch (publisher_mode_) {
    case PublisherMode::kSnapshot:
      done = SnapshotCycle();
      break;
    case PublisherMode::kReplay:
      done = gated() ? ReplaySync() : LegacyReplaySync();
      break;
    case PublisherMode::kLive:
      // Legacy: nothing to do; the first batch is forwarded as it is.
      done = gated() ? LiveSync() : true;
      break;
  }
  if (Interrupted()) return;
  if (!done) {
    sync_attempt_failed_ = true;
    MaybeClearStale();
    if (Interrupted()) return;
    const auto delay = sync_backoff_.NextDelay();
    spdlog::warn("resynchronisation attempt failed; retrying in {} ms",
                 delay.count());
    // The clear is due at its bound, not at the end of a long backoff.
    const auto end = io_.clock->Now() + delay;
    const auto due = StaleClearDue();
    if (due && *due < end) {
      if (WaitServicingHeartbeats(TimeUntil(*due))) return;
      MaybeClearStale();
      if (Interrupted()) return;
    }
    WaitServicingHeartbeats(TimeUntil(end));
    return;
  }
  need_sync_ = false;
  stale_cleared_ = false;
  sync_attempt_failed_ = false;
  sync_backoff_.Reset();
  restart_known_ = false;
  reconnect_sync_ = saw_disconnect_;
  // A gated synchronisation covered the hint (replay, snapshot) or used it
  // (LiveSync); a legacy one forwards it below, as the live loop would.
  std::optional<LiveBatch> leftover = std::move(sync_hint_);
  sync_hint_.reset();
  SyncStateStats();
  ++io_.stats->resyncs;
  if (!exact()) {
    ++io_.stats->resyncs_degraded;
  } else if (sync_installed_) {
    ++(publisher_mode_ == PublisherMode::kSnapshot
           ? io_.stats->resyncs_snapshot
           : io_.stats->resyncs_replay_fold);
  }
  last_gated_ok_ = io_.clock->Now();
  spdlog::info("stream synchronised ({} server, mode {}): applied seq {}{}",
               ServerModeName(server_mode_), PublisherModeName(publisher_mode_),
               watermarks_.applied() ? absl::StrCat(*watermarks_.applied())
                                     : std::string("none yet"),
               exact() ? "" : absl::StrCat(", degraded: ", degraded_reason_));
  if (leftover && !gated()) HandleBatch(*std::move(leftover));
}

ReplayResult StreamRecovery::DoReplay(uint64_t start,
                                      std::optional<uint64_t> through) {
  ++io_.stats->replays;
  ReplayResult result = io_.replay->Replay(start, through);
  io_.stats->replayed_batches += result.batches.size();
  io_.stats->replay_pages += result.pages;
  return result;
}

bool StreamRecovery::SnapshotCycle() {
  if (io_.snapshot_limiter == nullptr) return FetchAndInstallSnapshot();
  if (!io_.snapshot_limiter->Acquire(io_.clock)) return false;
  const bool done = FetchAndInstallSnapshot();
  io_.snapshot_limiter->Release();
  return done;
}

bool StreamRecovery::FetchAndInstallSnapshot() {
  if (io_.clock->WaitFor(options_.settle)) return false;
  // Whatever is queued now precedes the barrier the fetch publishes and is
  // covered by the snapshot; dropping it also makes room for the barrier.
  if (!DiscardQueued()) return false;
  saw_disconnect_ = false;
  absl::StatusOr<PublisherSnapshot> snapshot = io_.snapshot->Fetch();
  if (!snapshot.ok()) {
    spdlog::warn("snapshot fetch failed: {}",
                 LogText(snapshot.status().ToString(), kLogMessageBytes));
    return false;
  }
  ++io_.stats->snapshots;
  if (snapshot->version == 2 && options_.expected) {
    // A header that describes another stream or another hashing is never
    // installed: the stream stops (parked) until its entry is fixed.
    absl::Status matches =
        CheckSnapshotHeader(snapshot->fields, *options_.expected);
    if (!matches.ok()) {
      Fatal(std::move(matches), "snapshot-v2 header check");
      return false;
    }
  }
  // Wait for the barrier batch on the live stream: everything before it in
  // this epoch is covered by the snapshot.
  const auto deadline = io_.clock->Now() + options_.barrier_wait;
  while (true) {
    if (io_.clock->Stopping() || !fatal_.ok()) return false;
    const auto now = io_.clock->Now();
    if (now >= deadline) {
      spdlog::warn("snapshot barrier seq={} (epoch {}) not seen within {} ms",
                   snapshot->barrier_seq, LogText(snapshot->epoch),
                   options_.barrier_wait.count());
      return false;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    std::optional<LiveItem> item =
        NextItem(std::min(options_.poll, left + std::chrono::milliseconds(1)));
    ServiceHeartbeat();
    if (!item) continue;
    if (item->kind != LiveItem::Kind::kBatch) {
      const bool reconnected = NoteMarker(*item);
      if (!fatal_.ok()) return false;
      // Fails the attempt only if the barrier may be among the dropped.
      if (item->kind == LiveItem::Kind::kOverflow &&
          item->first_dropped_seq <= snapshot->barrier_seq &&
          snapshot->barrier_seq - item->first_dropped_seq < item->dropped) {
        return false;
      }
      if (reconnected) return false;
      continue;
    }
    ++io_.stats->messages_received;
    const LiveBatch& batch = item->batch;
    const TopicLabels labels = ParseTopicLabels(batch.topic);
    if (labels.epoch != snapshot->epoch) continue;
    if (batch.seq < snapshot->barrier_seq) continue;
    if (batch.seq == snapshot->barrier_seq &&
        labels.barrier_id == snapshot->barrier_id) {
      break;
    }
    spdlog::warn("snapshot barrier seq={} missed (live seq={} came first)",
                 snapshot->barrier_seq, batch.seq);
    return false;
  }
  // snapshot-v2 names each block's tier, mask and size: the install is what
  // the live batches would have built. snapshot-v1 names hashes only: all
  // at HBM, whole blocks.
  if (snapshot->version == 2 && options_.expected && !staged_unimplemented_ &&
      gated()) {
    return StagedInstall(*snapshot);
  }
  if (snapshot->version == 2) {
    return Install(
        snapshot->epoch, snapshot->barrier_seq,
        SnapshotV2Placement(snapshot->blocks, header_.cache_spec.has_value()),
        {}, std::nullopt);
  }
  std::optional<DegradedBy> degraded;
  if (header_.cache_spec) {
    degraded = DegradedBy{
        "snapshot_without_components",
        "a snapshot-v1 carries whole blocks only; component blocks stay "
        "unusable until re-reported"};
  }
  return Install(snapshot->epoch, snapshot->barrier_seq,
                 SnapshotPlacement(snapshot->hashes), {}, degraded);
}

bool StreamRecovery::DiscardQueued() {
  while (std::optional<LiveItem> stale =
             NextItem(std::chrono::milliseconds(0))) {
    if (stale->kind == LiveItem::Kind::kBatch) {
      ++io_.stats->messages_received;
    } else {
      NoteMarker(*stale);
    }
  }
  return fatal_.ok();
}

bool StreamRecovery::ReplaySync() {
  // Every queued batch was published before the replay is asked for: the
  // replay covers it, or it belongs to an incarnation older than the one
  // replayed, and it must not be applied on top of the new one's install
  // (its number may well follow the replay's last).
  if (!DiscardQueued()) return false;
  ReplayResult replay = DoReplay(0);
  if (replay.complete && !replay.batches.empty()) {
    const uint64_t first = replay.batches.front().seq;
    const uint64_t last = replay.batches.back().seq;
    // After a reconnect the replay may come from an incarnation that
    // restarted unseen: its numbers can overlap the checkpoint's although
    // its content does not follow it, so no resume (as in LiveSync).
    if (first > 0 && !restart_known_ && !reconnect_sync_ && !stale_cleared_) {
      ProbeResult probe = Probe("");
      if (!probe.completed) return false;
      if (probe.checkpoint && first <= *probe.checkpoint + 1 &&
          *probe.checkpoint <= last) {
        spdlog::info("resuming from the server checkpoint {} (replay {}..{})",
                     *probe.checkpoint, first, last);
        watermarks_.Reset(*probe.checkpoint, "", false, replay.batches);
        for (const LiveBatch& batch : replay.batches) {
          if (batch.seq <= *probe.checkpoint) continue;
          if (!SendBatch(batch)) return false;
        }
        return true;
      }
    }
    FoldResult fold = FoldBatches(replay.batches, options_.clear_tiers);
    std::optional<DegradedBy> degraded;
    if (first > 0) {
      degraded = DegradedBy{
          "replay_start_evicted",
          absl::StrCat("the replay buffer no longer holds the incarnation "
                       "start (it begins at seq ",
                       first, ")")};
    } else if (!fold.undecodable.empty()) {
      degraded = DegradedBy{
          "undecodable_batch",
          absl::StrCat("replayed batch seq=", fold.undecodable.front(),
                       " could not be decoded")};
    }
    return Install("", last, fold.placement.ToTierHashes(), replay.batches,
                   degraded);
  }
  if (replay.complete) {
    spdlog::info(
        "replay is empty: the publisher has published nothing since it "
        "started; waiting for its first batch");
    return LiveSync();
  }
  // A quiet publisher may publish nothing for long: the wait for a first
  // live batch is bounded by the synchronisation backoff, after which the
  // attempt fails and the next one replays again ("Recovery > Initial
  // synchronisation > Mode R").
  const auto wait = sync_backoff_.Peek();
  spdlog::warn(
      "replay from 0 failed ({}); continuing from live batches (replaying "
      "again if none comes within {} ms)",
      LogText(replay.problem, kLogMessageBytes), wait.count());
  return LiveSync(wait);
}

bool StreamRecovery::LiveSync(
    std::optional<std::chrono::milliseconds> wait_limit) {
  std::optional<LiveBatch> first = std::move(sync_hint_);
  sync_hint_.reset();
  if (!first) first = WaitFirstLiveBatch(wait_limit);
  if (!first) return false;
  const uint64_t seq = first->seq;
  // After a reconnect the first batch tells nothing about the incarnation:
  // a worker that restarted and published c + 1 batches looks exactly like
  // the old one continuing from the checkpoint c. Treated like a restart.
  if (!restart_known_ && !reconnect_sync_ && !stale_cleared_) {
    ProbeResult probe = Probe("");
    if (!probe.completed) {
      sync_hint_ = std::move(first);
      return false;
    }
    if (probe.checkpoint && *probe.checkpoint + 1 == seq) {
      spdlog::info("resuming from the server checkpoint {}", *probe.checkpoint);
      watermarks_.Reset(*probe.checkpoint, "", false);
      if (!SendBatch(*first)) {
        sync_hint_ = std::move(first);
        return false;
      }
      watermarks_.MarkLive(seq);
      return true;
    }
  }
  FoldResult fold =
      FoldBatches(std::span<const LiveBatch>(&*first, 1), options_.clear_tiers);
  std::optional<DegradedBy> degraded;
  if (seq != 0) {
    degraded =
        DegradedBy{"no_history", absl::StrCat("no history before seq ", seq)};
  } else if (!fold.undecodable.empty()) {
    degraded =
        DegradedBy{"undecodable_batch", "batch seq=0 could not be decoded"};
  }
  if (!Install("", seq, fold.placement.ToTierHashes(), {}, degraded)) {
    // Kept for the next attempt, or for the legacy path when Replace
    // turned out UNIMPLEMENTED: a REVOKE in it must not be lost.
    sync_hint_ = std::move(first);
    return false;
  }
  CountFoldedLiveBatch(fold);
  watermarks_.MarkLive(seq);
  return true;
}

bool StreamRecovery::LegacyReplaySync() {
  const uint64_t start = watermarks_.applied() ? *watermarks_.applied() + 1 : 0;
  ReplayResult replay = DoReplay(start);
  if (!replay.complete) {
    spdlog::warn("replay from {} failed ({}); forwarding live batches", start,
                 LogText(replay.problem, kLogMessageBytes));
    return true;
  }
  // Legacy mode is exact only once the bridge itself cleared the worker at
  // a known incarnation start ("Recovery > Legacy mode"): a replay from 0
  // that holds the incarnation from seq 0 (or nothing: it published
  // nothing yet). Until then blocks from before the bridge may linger.
  const bool from_start =
      start == 0 && (replay.batches.empty() || replay.batches.front().seq == 0);
  if (from_start &&
      !SendSeedEra(ClearRequests(header_, 0, options_.clear_tiers))) {
    return false;
  }
  // A clear at the incarnation start followed by its batches: an exact
  // install of the replay, as far as the resync statistics go.
  sync_installed_ = from_start;
  if (replay.batches.empty()) {
    if (from_start) SetExact();
    return true;
  }
  const uint64_t first = replay.batches.front().seq;
  if (first > start) {
    spdlog::warn(
        "replay starts at seq {} instead of {}: history lost; clearing the "
        "worker",
        first, start);
    if (!SendSeedEra(ClearRequests(header_, first, options_.clear_tiers))) {
      return false;
    }
    Degrade({"history_lost",
             absl::StrCat("the replay buffer no longer holds seq ", start)});
  }
  watermarks_.Clear();
  for (const LiveBatch& batch : replay.batches) {
    if (!SendBatch(batch)) return false;
  }
  watermarks_.Reset(replay.batches.back().seq, "", false, replay.batches);
  if (from_start) SetExact();
  return true;
}

}  // namespace kvindexer::bridge
