// The bridge's recovery cycle for one worker stream (docs/bridge-events.md,
// "Recovery"): keeps the server's copy of the worker's placement exact
// across bridge starts, publisher restarts, lost live messages and server
// restarts, or, when history is gone, a safe lower bound marked degraded.
//
// The engine is deterministic and single-threaded. It pulls live items from
// a LiveQueue (filled by the reader thread in production), talks to the
// server through a KvApplier and to the publisher's replay and snapshot
// sockets through the optional ReplaySource / SnapshotSource, and takes
// time, waiting and randomness from the outside, so tests run it with no
// real time.
//
// The code is split by concern: stream_recovery.cc (the live loop: the
// classification of each live batch, gaps, restarts, idle probes),
// stream_recovery_sync.cc (the initial synchronisation of each mode),
// stream_recovery_rpc.cc (registration, PROBE, INSTALL, SEND and their
// error handling) and stream_recovery_heartbeat.cc (the worker liveness
// heartbeats).
//
// Thread safety: not thread-safe; Run() and the observers from one thread.
#ifndef KVINDEXER_BRIDGE_STREAM_RECOVERY_H_
#define KVINDEXER_BRIDGE_STREAM_RECOVERY_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "bridge/action_builder.h"
#include "bridge/backoff.h"
#include "bridge/bridge_config.h"
#include "bridge/bridge_stats.h"
#include "bridge/chunker.h"
#include "bridge/event_decoder.h"
#include "bridge/kv_applier.h"
#include "bridge/live_buffer.h"
#include "bridge/log_throttle.h"
#include "bridge/recovery_environment.h"
#include "bridge/recovery_fold.h"
#include "bridge/replay_source.h"
#include "bridge/snapshot_header_check.h"
#include "bridge/snapshot_limiter.h"
#include "bridge/snapshot_source.h"
#include "bridge/stream_watermarks.h"
#include "common/wire_vocabulary.h"

namespace kvindexer::bridge {

struct RecoveryOptions {
  ApplyHeader header;
  std::vector<Tier> clear_tiers = {Tier::kHbm, Tier::kDram, Tier::kSsd};
  SequenceGate gate = SequenceGate::kAuto;
  ChunkLimits limits;
  size_t max_request_bytes = kMaxRequestBytes;
  // Timing ("Recovery > Constants").
  std::chrono::milliseconds poll{100};
  std::chrono::milliseconds probe_interval{1000};
  std::chrono::milliseconds loss_jitter_max{500};
  std::chrono::milliseconds settle{50};
  std::chrono::milliseconds barrier_wait{5000};
  Backoff::Duration rpc_backoff_initial{100};
  Backoff::Duration rpc_backoff_cap{2000};
  Backoff::Duration sync_backoff_initial{500};
  Backoff::Duration sync_backoff_cap{10000};
  // Worker liveness ("Recovery > Worker liveness"): the TTL each heartbeat
  // carries; 0 (the default here; the configuration's is 30 s) sends none.
  // Heartbeats are due every max(TTL / 3, min_heartbeat_period).
  std::chrono::milliseconds heartbeat_ttl{0};
  std::chrono::milliseconds min_heartbeat_period{100};
  // "Recovery > A resync that cannot finish": after this long unsynchronised
  // with attempts failing, the worker's placement is cleared at the server.
  std::chrono::milliseconds resync_clear_after{10'000};
  // The indexer's placement bound evicted placements of the stream
  // (common/eviction_header.h): with a snapshot endpoint, a resync installs
  // a whole snapshot, at most once per this interval. A worker that holds
  // more than the bound allows is evicted again by every install: while
  // installs come back evicted, the interval doubles, up to 8 times.
  std::chrono::milliseconds eviction_resync_interval{300'000};
  // Multi-stream mode (line A): the entry a snapshot-v2 header must match;
  // set, a snapshot-v2 installs through the staged snapshot RPCs. Unset
  // (single-worker mode): headers are not compared and every install is a
  // Replace.
  std::optional<StreamExpectation> expected;
};

// Builds the options of a configured bridge.
RecoveryOptions RecoveryOptionsFromConfig(const BridgeConfig& config);

// Everything the engine talks to. All pointers but `replay`, `snapshot` and
// `worker_probe` are required; all must outlive the engine.
struct RecoveryIo {
  KvApplier* applier = nullptr;
  LiveQueue* live = nullptr;
  ReplaySource* replay = nullptr;      // null: no replay endpoint
  SnapshotSource* snapshot = nullptr;  // null: no snapshot endpoint
  // Checked before each heartbeat; null: the worker address has no port,
  // and heartbeats then only prove that the bridge is alive.
  WorkerProbe* worker_probe = nullptr;
  RecoveryClock* clock = nullptr;
  std::function<uint64_t()> random;  // uniform 64-bit values
  BridgeStats* stats = nullptr;
  // Runs at the start of each synchronisation, before anything is sent;
  // an error ends Run() with it. Null: nothing runs.
  std::function<absl::Status()> before_sync;
  // Multi-stream mode. `configure` sends the process's Configure with this
  // stream's worker generation (empty: none known yet); it runs at the
  // start of each synchronisation and before a staged install whose header
  // named a new generation. It answers true when the indexer accepted a
  // Configure that listed this stream: the stream's record then exists and
  // the synchronisation sends no registration apply. `indexer_epoch` receives
  // the indexer_epoch of each Begin answer. `take_resync` is polled by the live
  // loop: true asks for a resynchronisation after a random wait of up to
  // loss_jitter_max (the indexer epoch changed). `snapshot_limiter` bounds
  // concurrent snapshot fetches with their installs. Null: none of these.
  std::function<bool(const std::string& worker_generation)> configure;
  std::function<void(const std::string& indexer_epoch)> indexer_epoch;
  std::function<bool()> take_resync;
  SnapshotLimiter* snapshot_limiter = nullptr;
};

class StreamRecovery {
 public:
  enum class ServerMode : uint8_t { kUndecided, kGated, kLegacy };
  enum class PublisherMode : uint8_t { kSnapshot, kReplay, kLive };

  StreamRecovery(RecoveryOptions options, RecoveryIo io);
  StreamRecovery(const StreamRecovery&) = delete;
  StreamRecovery& operator=(const StreamRecovery&) = delete;

  // Runs until the clock says stop (OK) or a permanent error (returned).
  // May be called again after it returned OK; the state carries over.
  // `on_tick` runs once per loop iteration (the runner's stats line).
  absl::Status Run(const std::function<void()>& on_tick = {});

  ServerMode server_mode() const { return server_mode_; }
  PublisherMode publisher_mode() const { return publisher_mode_; }
  bool synchronised() const { return !need_sync_; }
  // Exact: synchronised and nothing lost since the last exact install.
  bool exact() const { return !need_sync_ && degraded_reason_.empty(); }
  // Short reason ("no_history", ...); empty when exact.
  const std::string& degraded_reason() const { return degraded_reason_; }
  std::optional<uint64_t> applied() const { return watermarks_.applied(); }
  const std::string& epoch() const { return watermarks_.epoch(); }
  // The worker generation the requests carry (empty: none known).
  const std::string& worker_generation() const {
    return header_.worker_generation;
  }

 private:
  struct ProbeResult {
    bool completed = false;  // false: interrupted (stop, fatal)
    std::optional<uint64_t> checkpoint;
  };
  struct DegradedBy {
    std::string reason;   // short, for the stats line
    std::string message;  // for the WARN
  };

  // --- live loop (stream_recovery.cc)
  void HandleItem(LiveItem item);
  void HandleBatch(LiveBatch batch);
  void HandleGap(LiveBatch batch);
  void HandleRestart(LiveBatch batch);
  void HandleOverflow(const LiveItem& item);
  void MaybeIdleProbe();
  std::optional<LiveItem> NextItem(std::chrono::milliseconds timeout);
  // Pops until a live batch arrives (markers are accounted and skipped),
  // for at most `limit` when set.
  std::optional<LiveBatch> WaitFirstLiveBatch(
      std::optional<std::chrono::milliseconds> limit = std::nullopt);
  // Accounts a marker. True for a kConnected that ends a disconnect.
  bool NoteMarker(const LiveItem& item);

  // --- synchronisation (stream_recovery_sync.cc)
  void Sync();
  bool SnapshotCycle();
  // SnapshotCycle() between taking and giving back the snapshot permit.
  bool FetchAndInstallSnapshot();
  bool ReplaySync();
  // Drops every queued item (markers are accounted); false on a fatal one.
  bool DiscardQueued();
  // `wait_limit`: how long to wait for the first live batch (unbounded
  // when unset).
  bool LiveSync(
      std::optional<std::chrono::milliseconds> wait_limit = std::nullopt);
  bool LegacyReplaySync();
  // Replays from `start` (up to `through` when set), keeping the stats.
  ReplayResult DoReplay(uint64_t start,
                        std::optional<uint64_t> through = std::nullopt);

  // --- RPCs (stream_recovery_rpc.cc)
  bool Register();
  ProbeResult Probe(std::string_view epoch);
  // INSTALL(epoch, applied, placement) in the current server mode; on
  // success resets the watermarks to `applied` and sets the stream state.
  bool Install(const std::string& epoch, uint64_t applied,
               std::span<const kv_indexer::v1::TierHashes> placement,
               std::span<const LiveBatch> replayed,
               std::optional<DegradedBy> degraded);
  // A snapshot-v2's INSTALL in multi-stream mode (stream_recovery_staged.cc):
  // Begin, Appends, Commit; an Append that fails aborts the transaction
  // and the install starts again from Begin after the RPC backoff. Falls
  // back to Install() for good when the server has no staged RPCs.
  bool StagedInstall(const PublisherSnapshot& snapshot);
  // SEND(batch.seq, batch) in the current mode; advances `applied`.
  bool SendBatch(const LiveBatch& batch);
  // The server no longer covers the stream while SEND(seq) ran: clears all
  // tiers with a seed-era apply first if `seed_era_sent`, then StateLoss.
  void LoseStateAfterSeedEra(bool seed_era_sent, uint64_t seq,
                             std::string_view why);
  // Seed-era requests, resent from the first on a transient failure.
  bool SendSeedEra(
      const std::vector<kv_indexer::v1::ApplyExternalKvBatchRequest>& requests);
  // `probe`: a FAILED_PRECONDITION answer is counted as a sent RPC.
  absl::Status CallApply(
      const kv_indexer::v1::ApplyExternalKvBatchRequest& request,
      kv_indexer::v1::ApplyExternalKvBatchResponse* response,
      bool probe = false);
  // Counts a live batch that an install folded instead of SendBatch().
  void CountFoldedLiveBatch(const FoldResult& fold);
  // Decodes and builds `actions_`; false when the payload is undecodable.
  bool DecodeActions(const LiveBatch& batch);
  // Waits the next RPC backoff delay; false when the engine must stop.
  bool RpcBackoff(const absl::Status& status, std::string_view what);
  // After an install step's refusal by `rpc`: FAILED_PRECONDITION means the
  // server lost the stream (a resynchronisation starts, its reason naming
  // `step`), a permanent code stops the stream, anything else waits out the
  // backoff as RpcBackoff. True when the caller should try again.
  bool RetryInstallStep(const absl::Status& status, std::string_view rpc,
                        std::string_view step);
  // In the live loop: what a probe's answer (the checkpoint, or none) says
  // about the server's copy of the stream; a loss starts a resync.
  void CheckServerCheckpoint(std::optional<uint64_t> checkpoint);

  // --- a resync that cannot finish (stream_recovery_stale.cc)
  // The epoch the clear installs under (shown by the admin API).
  static constexpr char kResyncFailingEpoch[] = "kvindexer-resync-failing";
  // Once a synchronisation attempt has failed and the stream has been
  // unsynchronised for options_.resync_clear_after, clears the worker's
  // placement at the server (degraded "resync_failing") so that it holds no
  // block the worker may have dropped meanwhile. Once per unsynchronised
  // period; called after a failed attempt and while later ones wait.
  // True when it tried (whether or not the clear went through).
  bool MaybeClearStale();
  // When MaybeClearStale() will act, if it still has to.
  std::optional<RecoveryClock::Clock::time_point> StaleClearDue() const;
  std::chrono::milliseconds TimeUntil(
      RecoveryClock::Clock::time_point when) const;

  // --- the indexer's placement bound (stream_recovery_eviction.cc)
  // After an OK answer: when the applier saw the eviction header, counts
  // it and, with a snapshot endpoint and outside the interval, asks the
  // live loop for a resync (eviction_resync_pending_). `install`: the
  // answer to a whole install, which resets the interval when it was not
  // evicted and doubles it when it was.
  void CheckEvicted(bool install = false);
  // In the live loop: starts the resync CheckEvicted asked for.
  void MaybeResyncAfterEviction();

  // --- worker liveness (stream_recovery_heartbeat.cc)
  // Called on every turn of the live loop and of the synchronisation's
  // waits: starts the worker probe when a heartbeat is due, and sends the
  // heartbeat once the probe succeeded. Never waits for the probe.
  void ServiceHeartbeat();
  void SendHeartbeat();
  std::chrono::milliseconds HeartbeatPeriod() const;
  // Waits `duration` in poll-sized slices, servicing heartbeats; true when
  // the engine must stop.
  bool WaitServicingHeartbeats(std::chrono::milliseconds duration);

  // --- state
  // The degraded reason of legacy mode until the bridge has cleared the
  // worker at a known incarnation start ("Recovery > Legacy mode").
  static constexpr char kLegacyNoClear[] = "legacy_no_clear";
  static DegradedBy LegacyNoClear();
  void StateLoss(std::string_view why);
  void SwitchToLegacy(const absl::Status& status);
  void Fatal(absl::Status status, std::string_view what);
  void Degrade(const DegradedBy& by);
  void SetExact();
  // Marks the stream unsynchronised and tells a running Sync() to give up
  // its attempt (another synchronisation follows).
  void RequestSync();
  // A running Sync() must end: a new synchronisation was requested, a fatal
  // error happened, or the engine is stopping.
  bool Interrupted();
  bool gated() const { return server_mode_ != ServerMode::kLegacy; }
  void SyncModeStats();
  void SyncStateStats();

  const RecoveryOptions options_;
  RecoveryIo io_;
  // options_.header, with the worker generation once a snapshot-v2 header
  // named one.
  ApplyHeader header_;
  // The server answered a Begin UNIMPLEMENTED: snapshot-v2s install with
  // Replace.
  bool staged_unimplemented_ = false;
  PublisherMode publisher_mode_;
  ServerMode server_mode_;

  StreamWatermarks watermarks_;
  // The live batch that triggered a resynchronisation (restart or gap):
  // the first batch of mode L's synchronisation; covered by a replay or
  // snapshot in the other modes.
  std::optional<LiveBatch> sync_hint_;
  // True until a synchronisation succeeds; stays true while one runs and
  // after one was cut short (stop, failure), so observers never see a
  // stream synchronised that is not.
  bool need_sync_ = true;
  // When need_sync_ last became true (construction for the first sync).
  RecoveryClock::Clock::time_point unsynced_since_{};
  // MaybeClearStale() cleared the worker during this unsynchronised
  // period: the server's checkpoint no longer describes a placement the
  // next synchronisation may resume from.
  bool stale_cleared_ = false;
  // A synchronisation attempt failed since the last success.
  bool sync_attempt_failed_ = false;
  // Set by RequestSync(); cleared when a synchronisation attempt starts.
  bool sync_requested_ = false;
  bool loss_jitter_pending_ = false;
  bool eviction_resync_pending_ = false;
  std::optional<RecoveryClock::Clock::time_point> last_eviction_resync_;
  // Between eviction resyncs: options_.eviction_resync_interval times this.
  uint32_t eviction_resync_factor_ = 1;
  bool restart_known_ = false;  // the next sync follows a detected restart
  // A kDisconnected was seen and no kConnected after it yet.
  bool saw_disconnect_ = false;
  // A disconnect was seen since the last successful synchronisation: mode
  // L (and mode R's fallback to it) must not resume from the checkpoint.
  bool reconnect_sync_ = false;
  std::string degraded_reason_;
  absl::Status fatal_;
  RecoveryClock::Clock::time_point last_gated_ok_{};
  // Set by a successful Install(); tells Sync() which kind of resync it
  // completed (the stats' resyncs{...}).
  bool sync_installed_ = false;
  // Heartbeats: when the next is due, whether a worker probe is pending,
  // and whether the last one failed (to log the recovery once).
  RecoveryClock::Clock::time_point next_beat_{};
  bool worker_check_pending_ = false;
  bool worker_unreachable_ = false;

  Backoff rpc_backoff_;
  Backoff sync_backoff_;
  EventDecoder decoder_;
  DecodedBatch decoded_;
  ActionList actions_;
  LogThrottle malformed_throttle_;
  LogThrottle stale_throttle_;
  LogThrottle rpc_throttle_;
  LogThrottle skipped_event_throttle_;
  LogThrottle worker_probe_throttle_;
  LogThrottle eviction_throttle_;
  LogThrottle heartbeat_throttle_;
};

std::string_view ServerModeName(StreamRecovery::ServerMode mode);
std::string_view PublisherModeName(StreamRecovery::PublisherMode mode);

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_STREAM_RECOVERY_H_
