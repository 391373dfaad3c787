// ServerMetrics: everything kv-indexer-server exposes on
// KV_INDEXER_METRICS_ADDR (docs/metrics.md), registered in one registry.
//
// The RPC counts and latencies, the prefix answers' reuse figures and the
// apply queue's wait are instruments the service updates as calls run
// (server/rpc_metrics.h, server/prefix_hit_metrics.h, TaskExecutor); the
// reuse figures' per-worker counters are capped by `worker_series` too.
// So are the work queues' refusals (server/queue_refusal.h). Everything
// else is read at scrape time by collectors, so the serving paths pay
// nothing for it: the prefix admission and shed counters, the queues'
// depths, the gRPC port's connections, the backend's stats
// (OperatorView::ReadBackendStats), the worker counts by state
// (OperatorView::CountWorkers) and series of their own for at most
// `worker_series` workers, the first by id (one page of
// OperatorView::ListWorkersPage, so a scrape never holds up a mutation),
// the liveness counters, the data directory's figures and, on a replica of
// the fleet event log, the follower's position, lag and record counts.
//
// Thread safety: the collectors run on the HTTP server's threads and only
// call thread-safe accessors. SetDurableStore may be called while scrapes
// run.
#ifndef KVINDEXER_SERVER_SERVER_METRICS_H_
#define KVINDEXER_SERVER_SERVER_METRICS_H_

#include <atomic>

#include "common/metrics_registry.h"
#include "core/operator_view.h"
#include "durable/durable_store.h"
#include "replica/eviction_proposer.h"
#include "replica/log_follower.h"
#include "replica/snapshot_scheduler.h"
#include "server/connection_listener.h"
#include "server/kv_indexer_service.h"
#include "server/metrics_config.h"
#include "server/prefix_hit_metrics.h"
#include "server/read_authorizer.h"
#include "server/rpc_metrics.h"

namespace kvindexer {

class ServerMetrics {
 public:
  // Registers every metric and attaches the instruments to `service`.
  // REQUIRES: called before `service` serves; everything passed outlives
  // this object, which outlives every scrape of `registry`.
  // A non-null `admin_reads` reports its refusals while it is enabled.
  ServerMetrics(MetricsRegistry& registry, OperatorView& indexer,
                KvIndexerService& service,
                uint32_t worker_series = kDefaultMetricsWorkerSeries,
                const ReadAuthorizer* admin_reads = nullptr);
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  // The data directory's store once it is open (its figures are absent
  // before); null again before it closes.
  // The per-method instruments, for the admin service to record into.
  RpcMetrics* rpc() { return &rpc_; }
  // The admin queue's refusals and ExplainPrefix's, for the admin service
  // to count into.
  Counter* admin_queue_rejections() { return &admin_queue_rejections_; }
  Counter* explain_rejections() { return &explain_rejections_; }
  // The gRPC port's listener once it is bound (its figures are absent
  // before); null again before it is destroyed.
  void SetConnectionListener(const ConnectionListener* listener) {
    listener_.store(listener, std::memory_order_release);
  }

  void SetDurableStore(const durable::DurableStore* store) {
    store_.store(store, std::memory_order_release);
  }
  // A replica's log follower (its figures are absent without one); null
  // again before it is destroyed.
  void SetLogFollower(const replica::LogFollower* follower) {
    follower_.store(follower, std::memory_order_release);
  }
  // A replica's snapshot scheduler, likewise; and the position of the
  // snapshot it started from (0: none).
  void SetSnapshotScheduler(const replica::SnapshotScheduler* scheduler) {
    scheduler_.store(scheduler, std::memory_order_release);
  }
  // A replica's proposer of index-wide evictions (present only with
  // KV_INDEXER_MAX_PLACEMENTS); null again before it is destroyed.
  void SetEvictionProposer(const replica::EvictionProposer* proposer) {
    proposer_.store(proposer, std::memory_order_release);
  }
  void SetLoadedSnapshotPosition(uint64_t position) {
    loaded_snapshot_.store(position, std::memory_order_relaxed);
  }

 private:
  RpcMetrics rpc_;
  PrefixHitMetrics prefix_hits_;
  Histogram& apply_wait_;
  Counter& admin_queue_rejections_;
  Counter& explain_rejections_;
  std::atomic<const ConnectionListener*> listener_{nullptr};
  std::atomic<const durable::DurableStore*> store_{nullptr};
  std::atomic<const replica::LogFollower*> follower_{nullptr};
  std::atomic<const replica::SnapshotScheduler*> scheduler_{nullptr};
  std::atomic<const replica::EvictionProposer*> proposer_{nullptr};
  std::atomic<uint64_t> loaded_snapshot_{0};
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_SERVER_METRICS_H_
