#include "server/server_metrics.h"

#include <chrono>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/stream_key.h"
#include "core/worker_snapshot.h"
#include "server/queue_refusal.h"
#include "server/write_authorizer.h"

namespace kvindexer {
namespace {

double Seconds(MonotonicClock::Duration d) {
  return std::chrono::duration<double>(d).count();
}

std::string_view FidelityName(Fidelity fidelity) {
  switch (fidelity) {
    case Fidelity::kExact:
      return "exact";
    case Fidelity::kDegraded:
      return "degraded";
    case Fidelity::kUnknown:
      break;
  }
  return "unknown";
}

void WriteBackend(OperatorView& indexer, MetricsWriter& w) {
  const BackendStats stats = indexer.ReadBackendStats();
  w.Gauge("kvindexer_backend_blocks", "Block records the backend holds.",
          static_cast<double>(stats.blocks));
  w.Gauge("kvindexer_backend_placements",
          "(worker, tier, block) placements the backend holds.",
          static_cast<double>(stats.placements));
  w.Gauge("kvindexer_backend_workers", "Worker records the backend holds.",
          static_cast<double>(stats.workers));
  w.Gauge("kvindexer_backend_hit_counters",
          "Block hit counters the backend holds.",
          static_cast<double>(stats.hit_counters));
  w.Gauge("kvindexer_backend_memory_bytes",
          "Heap the backend accounts for itself.",
          static_cast<double>(stats.memory_bytes));
}

void WriteWorkerCounts(const WorkerCounts& counts, MetricsWriter& w) {
  w.Gauge("kvindexer_workers", "Workers the index has a record of.",
          static_cast<double>(counts.total));
  w.Gauge("kvindexer_workers_ready",
          "Workers whose placements may answer queries.",
          static_cast<double>(counts.ready));
  w.Gauge("kvindexer_workers_sequenced",
          "Workers whose feed is sequenced (gated by a checkpoint).",
          static_cast<double>(counts.sequenced));
  w.Gauge("kvindexer_workers_configured",
          "Workers listed by ConfigureExpectedWorkers.",
          static_cast<double>(counts.configured));
  w.Gauge("kvindexer_workers_heartbeating",
          "Workers with a record marked by a heartbeat.",
          static_cast<double>(counts.heartbeating));
  w.Gauge("kvindexer_workers_evicted",
          "Workers the placement bound evicted placements of since their "
          "last whole snapshot (fidelity degraded, reason evicted).",
          static_cast<double>(counts.evicted));
  for (const Fidelity fidelity :
       {Fidelity::kUnknown, Fidelity::kExact, Fidelity::kDegraded}) {
    w.Gauge(
        "kvindexer_workers_by_fidelity",
        "Workers by the fidelity their bridge last declared.",
        static_cast<double>(counts.by_fidelity[static_cast<size_t>(fidelity)]),
        {{"fidelity", std::string(FidelityName(fidelity))}});
  }
}

// Series of their own for the first `limit` workers by id.
void WriteWorkers(OperatorView& indexer, uint32_t limit, MetricsWriter& w) {
  const bool bounded = indexer.eviction_stats().bound.enabled();
  const WorkerCounts counts = indexer.CountWorkers();
  WriteWorkerCounts(counts, w);
  const std::vector<WorkerSnapshot> workers =
      limit == 0 ? std::vector<WorkerSnapshot>()
                 : indexer.ListWorkersPage("", limit,
                                           /*placement_counts=*/false);
  w.Gauge("kvindexer_worker_series_omitted",
          "Workers left without series of their own by "
          "KV_INDEXER_METRICS_WORKER_SERIES.",
          counts.total > workers.size()
              ? static_cast<double>(counts.total - workers.size())
              : 0.0);
  const MonotonicClock::TimePoint now = indexer.clock().Now();
  for (const WorkerSnapshot& worker : workers) {
    // A legacy stream keeps exactly its seed-era labels; any other adds
    // its namespace and rank.
    const StreamKey key = DecodeStreamKey(worker.worker_id);
    MetricLabels id = {{"worker_id", key.worker_id}};
    if (!key.legacy()) {
      id.emplace_back("namespace", key.ns);
      id.emplace_back("dp_rank", std::to_string(key.dp_rank));
    }
    w.Gauge("kvindexer_worker_ready",
            "1 when the worker's placements may answer queries.",
            worker.ready ? 1 : 0, id);
    w.Gauge("kvindexer_worker_sequenced",
            "1 when the worker's feed is sequenced (gated by a checkpoint).",
            worker.sequence_state == SequenceState::kSequenced ? 1 : 0, id);
    MetricLabels fidelity = id;
    fidelity.emplace_back("fidelity", FidelityName(worker.fidelity));
    w.Gauge("kvindexer_worker_fidelity",
            "1 for the fidelity the worker's bridge last declared "
            "(exact, degraded or unknown).",
            1, std::move(fidelity));
    // Only with a bound: without one these would be three more series per
    // worker, always zero.
    if (bounded) {
      w.Gauge("kvindexer_worker_evicted",
              "1 while the placement bound has evicted placements of the "
              "worker that no whole snapshot has replaced.",
              worker.evicted ? 1 : 0, id);
      for (const EvictionReason reason :
           {EvictionReason::kWorkerBound, EvictionReason::kIndexBound}) {
        MetricLabels by_reason = id;
        by_reason.emplace_back("reason", EvictionReasonName(reason));
        w.Counter("kvindexer_worker_evicted_placements",
                  "Placements of the worker the placement bound evicted since "
                  "its record was created in this process, by reason.",
                  static_cast<double>(
                      worker.evicted_placements[static_cast<size_t>(reason)]),
                  std::move(by_reason));
      }
    }
    if (worker.checkpoint.has_value()) {
      w.Gauge("kvindexer_worker_checkpoint_seq",
              "The last sequence number applied for a sequenced worker.",
              static_cast<double>(worker.checkpoint->seq), id);
    }
    if (worker.last_apply.has_value()) {
      w.Gauge("kvindexer_worker_last_apply_age_seconds",
              "Seconds since a mutation last took effect for the worker.",
              Seconds(now - *worker.last_apply), id);
    }
    if (worker.last_heartbeat.has_value()) {
      w.Gauge("kvindexer_worker_last_heartbeat_age_seconds",
              "Seconds since the worker's last heartbeat.",
              Seconds(now - *worker.last_heartbeat), id);
    }
  }
}

void WriteLiveness(const OperatorView& indexer, MetricsWriter& w) {
  const LivenessStats s = indexer.liveness_stats();
  w.Counter("kvindexer_liveness_heartbeats",
            "Valid heartbeat headers on validated applies.",
            static_cast<double>(s.heartbeats));
  w.Counter("kvindexer_liveness_malformed_heartbeats",
            "Heartbeat headers ignored as unparsable.",
            static_cast<double>(s.malformed_heartbeats));
  w.Counter("kvindexer_liveness_sweeps", "Liveness sweeps run.",
            static_cast<double>(s.sweeps));
  w.Counter("kvindexer_liveness_sweeps_refused",
            "Sweeps the census rule stopped (every marked worker expired).",
            static_cast<double>(s.sweeps_refused));
  w.Counter("kvindexer_liveness_workers_cleared",
            "Workers whose placements a sweep cleared.",
            static_cast<double>(s.workers_cleared));
  w.Counter("kvindexer_liveness_clear_failures",
            "Sweep clears the backend failed.",
            static_cast<double>(s.clear_failures));
  w.Gauge("kvindexer_liveness_marked_workers",
          "Workers currently marked as heartbeating.",
          static_cast<double>(s.marked_workers));
}

void WriteEvictions(const OperatorView& indexer, MetricsWriter& w) {
  const EvictionStats s = indexer.eviction_stats();
  w.Gauge("kvindexer_placement_bound_max",
          "Placements the index may hold (KV_INDEXER_MAX_PLACEMENTS); 0: "
          "unbounded.",
          static_cast<double>(s.bound.max_placements));
  w.Gauge("kvindexer_placement_bound_max_per_worker",
          "Placements one worker may hold "
          "(KV_INDEXER_MAX_PLACEMENTS_PER_WORKER); 0: unbounded.",
          static_cast<double>(s.bound.max_per_worker));
  for (const EvictionReason reason :
       {EvictionReason::kWorkerBound, EvictionReason::kIndexBound}) {
    const auto r = static_cast<size_t>(reason);
    const MetricLabels labels = {
        {"reason", std::string(EvictionReasonName(reason))}};
    w.Counter("kvindexer_placement_bound_tier_clears",
              "Worker tiers the placement bound cleared, by reason: "
              "worker_bound (the worker was over its own bound) or "
              "index_bound (the index was over its bound and the worker over "
              "its fair share).",
              static_cast<double>(s.tiers[r]), labels);
    w.Counter("kvindexer_placement_bound_evicted_placements",
              "Placements those evictions removed, by reason.",
              static_cast<double>(s.placements[r]), labels);
  }
}

void WriteDurable(const durable::DurableStore& store, MetricsWriter& w) {
  const durable::DurableFigures f = store.figures();
  w.Gauge("kvindexer_wal_end_bytes",
          "Logical end of the write-ahead log: record bytes appended.",
          static_cast<double>(f.log_end));
  w.Gauge("kvindexer_checkpoint_generation",
          "Generation of the newest committed checkpoint.",
          static_cast<double>(f.checkpoint_generation));
  w.Counter("kvindexer_checkpoints_written", "Checkpoints this process wrote.",
            static_cast<double>(f.checkpoints_written));
  w.Gauge("kvindexer_checkpoint_last_duration_seconds",
          "How long the last checkpoint took to build (0 before the first).",
          f.last_checkpoint_seconds);
  w.Gauge("kvindexer_checkpoint_last_success_timestamp_seconds",
          "When this process last put a checkpoint in place, in seconds "
          "since the Unix epoch (0 before the first).",
          f.last_checkpoint_unix_seconds);
  w.Gauge("kvindexer_checkpoint_in_progress",
          "1 from a log rotation until its checkpoint is written or has "
          "failed.",
          f.checkpoint_in_progress ? 1.0 : 0.0);
  for (size_t i = 0; i < durable::kCheckpointFailureCount; ++i) {
    const auto reason = static_cast<durable::CheckpointFailure>(i);
    w.Counter(
        "kvindexer_checkpoint_failures",
        "Checkpoints that were not written, by reason: rotate (the "
        "log could not start its next file), build (the build or its "
        "publication failed), timeout (abandoned after "
        "KV_INDEXER_CHECKPOINT_TIMEOUT_MS). Each is retried at the next "
        "rotation.",
        static_cast<double>(f.checkpoint_failures.of(reason)),
        {{"reason", std::string(durable::CheckpointFailureName(reason))}});
  }
  w.Counter("kvindexer_checkpoint_restarts",
            "Idle checkpoint builds that writes waited for and that could "
            "not be raised to normal priority (no CAP_SYS_NICE): stopped and "
            "started over at normal priority.",
            static_cast<double>(f.checkpoint_restarts));
  w.Counter("kvindexer_wal_syncs",
            "fdatasync calls of the log (with always, started as records "
            "are appended).",
            static_cast<double>(f.syncs));
  w.Gauge("kvindexer_wal_replay_tail_bytes",
          "Log bytes a restart would replay now: every record after the "
          "newest checkpoint in place.",
          static_cast<double>(f.replay.tail_bytes));
  w.Gauge("kvindexer_wal_replay_max_bytes",
          "KV_INDEXER_MAX_REPLAY_BYTES: writes that would take the tail "
          "past it wait for the checkpoint build in progress (0: no bound).",
          static_cast<double>(f.replay.max_bytes));
  w.Counter("kvindexer_wal_write_stalls",
            "Writes that waited for a checkpoint build at the replay bound.",
            static_cast<double>(f.replay.stalls));
  w.Counter("kvindexer_wal_write_stall_seconds",
            "Time writes spent waiting at the replay bound.",
            f.replay.stall_seconds);
  w.Gauge("kvindexer_wal_write_stalled",
          "1 while a write waits for a checkpoint build at the replay bound.",
          f.replay.stalled ? 1.0 : 0.0);
  w.Gauge("kvindexer_wal_failed",
          "1 once the write-ahead log failed (a failed fdatasync): every "
          "write is refused until a restart, and grpc.health.v1 reports "
          "NOT_SERVING.",
          f.log_failed ? 1.0 : 0.0);
  w.Gauge("kvindexer_wal_recovery_cut_bytes",
          "Log bytes the start-up recovery cut off or set aside: a torn tail, "
          "or damage (kvindexer_wal_recovery_damaged).",
          static_cast<double>(f.recovery_cut_bytes));
  w.Gauge("kvindexer_wal_recovery_cut_records",
          "Intact log records among those bytes: mutations lost at the "
          "start, acknowledged ones among them.",
          static_cast<double>(f.recovery_cut_records));
  w.Gauge("kvindexer_wal_recovery_damaged",
          "1 when the start-up recovery found damage rather than a torn "
          "tail (intact records after a bad one, a bad file header, a log "
          "file set aside with records in it) and logged it at ERROR; the "
          "cut bytes are kept in the data directory.",
          f.recovery_log_damaged ? 1.0 : 0.0);
  for (size_t i = 0; i < durable::kWalRefusalCount; ++i) {
    const auto reason = static_cast<durable::WalRefusal>(i);
    w.Counter("kvindexer_wal_append_failures",
              "Mutations the write-ahead log refused to append, by reason: "
              "no_space, file_too_large, io_error, poisoned (the log failed "
              "earlier), invalid_record.",
              static_cast<double>(f.append_refusals.of(reason)),
              {{"reason", std::string(durable::WalRefusalName(reason))}});
  }
}

void WriteSnapshots(const replica::SnapshotScheduler& scheduler,
                    MetricsWriter& w) {
  const replica::SnapshotScheduler::Stats stats = scheduler.stats();
  w.Gauge("kvindexer_fleet_snapshot_lease_held",
          "1 while this replica holds the snapshot lease and writes the "
          "fleet's snapshots.",
          stats.lease_held ? 1 : 0);
  w.Counter("kvindexer_fleet_snapshots_written",
            "Snapshots this replica wrote.",
            static_cast<double>(stats.rounds_written));
  w.Counter("kvindexer_fleet_snapshot_failures",
            "Snapshot rounds of this replica that failed (tried again at "
            "the next interval).",
            static_cast<double>(stats.rounds_failed));
  w.Gauge("kvindexer_fleet_snapshot_last_position",
          "Log position of the last snapshot this replica wrote (0: none).",
          static_cast<double>(stats.last_position));
  w.Gauge("kvindexer_fleet_snapshot_last_bytes",
          "Size of the last snapshot this replica wrote.",
          static_cast<double>(stats.last_bytes));
  w.Gauge("kvindexer_fleet_snapshot_last_duration_seconds",
          "How long the last snapshot round of this replica took.",
          stats.last_round_seconds);
}

// One counter family labelled by result: a series per (result, value).
void CountersByResult(
    MetricsWriter& w, std::string_view name, std::string_view help,
    std::initializer_list<std::pair<std::string_view, uint64_t>> values) {
  for (const auto& [result, value] : values) {
    w.Counter(name, help, static_cast<double>(value),
              {{"result", std::string(result)}});
  }
}

void WriteFollower(const replica::LogFollower& follower, MetricsWriter& w) {
  w.Gauge("kvindexer_fleet_log_reachable",
          "1 while the fleet event log answers this replica's reads.",
          follower.in_contact() ? 1 : 0);
  w.Gauge("kvindexer_fleet_applied_position",
          "The last fleet event log position handed to the index.",
          static_cast<double>(follower.applied_position()));
  w.Gauge("kvindexer_fleet_lag_records",
          "Records between the event log's last position, as last read, "
          "and the last one applied.",
          static_cast<double>(follower.lag()));
  const replica::LogFollowerCounts counts = follower.counts();
  CountersByResult(w, "kvindexer_fleet_records",
                   "Fleet event log records by what became of them: applied, "
                   "refused by the index, undecodable (both skipped), or "
                   "trimmed from the log before they were read.",
                   {{"applied", counts.applied},
                    {"refused", counts.refused},
                    {"undecodable", counts.undecodable},
                    {"trimmed", counts.trimmed}});
  CountersByResult(
      w, "kvindexer_fleet_snapshot_reloads",
      "Reloads of the newest fleet snapshot after records this "
      "replica still needed were trimmed from the log: loaded, "
      "or failed (tried again).",
      {{"loaded", counts.reloads}, {"failed", counts.reload_failures}});
}

// kvindexer_queue_rejections_total{queue}: one series per queue.
Counter& QueueRejections(MetricsRegistry& registry, WorkQueue queue) {
  return registry.AddCounter(
      "kvindexer_queue_rejections",
      "Calls refused with RESOURCE_EXHAUSTED because their work queue was "
      "full (apply: KV_INDEXER_APPLY_QUEUE_MAX, lookup: "
      "KV_INDEXER_LOOKUP_QUEUE_MAX, admin: KV_INDEXER_ADMIN_QUEUE_MAX).",
      {{"queue", std::string(WorkQueueName(queue))}});
}

void WriteConnections(const ConnectionListener& listener, MetricsWriter& w) {
  w.Gauge("kvindexer_grpc_connections", "Connections open on the gRPC port.",
          static_cast<double>(listener.open_connections()));
  w.Gauge("kvindexer_grpc_max_connections",
          "The cap on open connections (KV_INDEXER_GRPC_MAX_CONNECTIONS).",
          static_cast<double>(listener.max_connections()));
  w.Counter("kvindexer_grpc_connections_refused",
            "Connections closed at once because the cap was reached.",
            static_cast<double>(listener.refused_total()));
  w.Counter("kvindexer_grpc_accept_failures",
            "Times accepting a connection failed for lack of file "
            "descriptors or memory (accepting paused for 100 ms).",
            static_cast<double>(listener.accept_failures_total()));
}

}  // namespace

ServerMetrics::ServerMetrics(MetricsRegistry& registry, OperatorView& indexer,
                             KvIndexerService& service, uint32_t worker_series,
                             const ReadAuthorizer* admin_reads)
    : rpc_(registry),
      prefix_hits_(registry, worker_series),
      apply_wait_(
          registry.AddHistogram("kvindexer_apply_queue_wait_seconds",
                                "Time a mutation waited for the apply thread.",
                                kLatencyBucketsSeconds)),
      admin_queue_rejections_(QueueRejections(registry, WorkQueue::kAdmin)),
      explain_rejections_(registry.AddCounter(
          "kvindexer_admin_explain_rejections",
          "ExplainPrefix calls refused with RESOURCE_EXHAUSTED: as many as "
          "allowed were queued or running.")) {
  service.AttachMetrics(&rpc_, &apply_wait_);
  service.CountPrefixHitsInto(&prefix_hits_);
  service.CountQueueRejectionsInto(
      &QueueRejections(registry, WorkQueue::kApply),
      &QueueRejections(registry, WorkQueue::kLookup));
  registry.AddCollector([this](MetricsWriter& w) {
    if (const ConnectionListener* listener =
            listener_.load(std::memory_order_acquire)) {
      WriteConnections(*listener, w);
    }
  });
  if (admin_reads != nullptr && admin_reads->enabled()) {
    registry.AddCollector([admin_reads](MetricsWriter& w) {
      w.Counter("kvindexer_admin_read_token_unauthenticated",
                "Admin calls refused with UNAUTHENTICATED: no bearer token.",
                static_cast<double>(admin_reads->unauthenticated_total()));
      w.Counter("kvindexer_admin_read_token_permission_denied",
                "Admin calls refused with PERMISSION_DENIED: a token that "
                "is neither the read token nor the write token.",
                static_cast<double>(admin_reads->permission_denied_total()));
    });
  }
  registry.AddCollector([&service](MetricsWriter& w) {
    w.Counter("kvindexer_prefix_admission_rejections",
              "Prefix queries refused with RESOURCE_EXHAUSTED: too many in "
              "flight.",
              static_cast<double>(service.rejection_log().rejected_total()));
    w.Counter("kvindexer_prefix_deadline_sheds",
              "Prefix queries shed with DEADLINE_EXCEEDED: their caller's "
              "deadline had passed.",
              static_cast<double>(service.rejection_log().shed_total()));
    w.Gauge("kvindexer_prefix_queries_in_flight",
            "Prefix scans holding an admission permit.",
            service.admission().in_flight());
    w.Gauge("kvindexer_apply_queue_depth",
            "Mutations waiting for the apply thread.",
            static_cast<double>(service.apply_queue_depth()));
    w.Gauge("kvindexer_ack_queue_depth",
            "Answers to mutations waiting for the write-ahead log's sync.",
            static_cast<double>(service.ack_queue_depth()));
    w.Gauge("kvindexer_lookup_queue_depth",
            "MatchExternalKv and GetExternalKvHitCounts calls waiting for a "
            "lookup thread.",
            static_cast<double>(service.lookup_queue_depth()));
    w.Counter("kvindexer_ack_queue_full",
              "Mutations whose answer the apply thread waited for itself "
              "because the ack queue was full (nothing is refused; applies "
              "slow down).",
              static_cast<double>(service.ack_queue_full_total()));
    // Write-token refusals (docs/security.md), when a token is required.
    if (const WriteAuthorizer* auth = service.write_authorizer();
        auth != nullptr && auth->enabled()) {
      w.Counter("kvindexer_write_token_unauthenticated",
                "Mutations refused with UNAUTHENTICATED: no bearer token.",
                static_cast<double>(auth->unauthenticated_total()));
      w.Counter("kvindexer_write_token_permission_denied",
                "Mutations refused with PERMISSION_DENIED: a wrong token.",
                static_cast<double>(auth->permission_denied_total()));
    }
  });
  registry.AddCollector(
      [&indexer](MetricsWriter& w) { WriteBackend(indexer, w); });
  registry.AddCollector([&indexer, worker_series](MetricsWriter& w) {
    w.Gauge("kvindexer_backend_failed",
            "1 once a backend mutation failed in a way the backend cannot "
            "continue from (grpc.health.v1 then reports NOT_SERVING).",
            indexer.BackendFailure().has_value() ? 1.0 : 0.0);
    WriteWorkers(indexer, worker_series, w);
    WriteEvictions(indexer, w);
    WriteLiveness(indexer, w);
  });
  registry.AddCollector([this](MetricsWriter& w) {
    if (const durable::DurableStore* store =
            store_.load(std::memory_order_acquire)) {
      WriteDurable(*store, w);
    }
    if (const replica::LogFollower* follower =
            follower_.load(std::memory_order_acquire)) {
      WriteFollower(*follower, w);
      w.Gauge("kvindexer_fleet_snapshot_loaded_position",
              "Log position of the snapshot this replica started from (0: "
              "none; it read the log from its start).",
              static_cast<double>(
                  loaded_snapshot_.load(std::memory_order_relaxed)));
    }
    if (const replica::SnapshotScheduler* scheduler =
            scheduler_.load(std::memory_order_acquire)) {
      WriteSnapshots(*scheduler, w);
    }
    if (const replica::EvictionProposer* proposer =
            proposer_.load(std::memory_order_acquire)) {
      const replica::EvictionProposalCounts counts = proposer->counts();
      CountersByResult(
          w, "kvindexer_fleet_eviction_proposals",
          "This replica's proposals of index-wide placement evictions to the "
          "fleet event log: appended, fenced (another replica's came first) "
          "or failed (retried).",
          {{"appended", counts.appended},
           {"fenced", counts.fenced},
           {"failed", counts.failed}});
    }
  });
}

}  // namespace kvindexer
