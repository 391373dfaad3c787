// SnapshotScheduler: the thread on each replica that keeps or watches the
// snapshot lease and, while it holds the lease, writes a snapshot round
// every interval (docs/fleet.md, "Snapshots"). Rounds run off the serving
// path (replica/snapshot_writer.h); a failed round is logged and tried again
// at the next interval.
//
// Thread safety: Start, Stop and the destructor from one thread; stats()
// from any.
#ifndef KVINDEXER_REPLICA_SNAPSHOT_SCHEDULER_H_
#define KVINDEXER_REPLICA_SNAPSHOT_SCHEDULER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "common/clock.h"
#include "fleet/event_log.h"
#include "fleet/lease_register.h"
#include "fleet/snapshot_store.h"
#include "replica/snapshot_config.h"
#include "replica/snapshot_lease.h"
#include "replica/snapshot_writer.h"

namespace kvindexer::replica {

class SnapshotScheduler {
 public:
  struct Stats {
    bool lease_held = false;
    uint64_t rounds_written = 0;  // rounds that stored a snapshot
    uint64_t rounds_failed = 0;
    uint64_t last_position = 0;  // of the newest snapshot this replica wrote
    uint64_t last_bytes = 0;
    double last_round_seconds = 0;
  };

  // `round.keep` is taken from `config`. `unix_ms_now` stamps manifests.
  // REQUIRES: everything passed outlives the scheduler;
  // config.interval_ms > 0.
  SnapshotScheduler(fleet::EventLog* log, fleet::SnapshotStore* store,
                    fleet::LeaseRegister* lease, const SnapshotConfig& config,
                    SnapshotRoundOptions round, const MonotonicClock* clock,
                    std::function<int64_t()> unix_ms_now);
  ~SnapshotScheduler();
  SnapshotScheduler(const SnapshotScheduler&) = delete;
  SnapshotScheduler& operator=(const SnapshotScheduler&) = delete;

  // Runs Step every third of the lease TTL on a thread of its own.
  void Start();
  // Abandons a round in progress, gives the lease up and joins.
  void Stop();

  // One step: the lease's Tick, then a round when this replica holds the
  // lease and one interval has passed since it took the lease or since
  // its last round began. Public for tests, which call it without Start.
  void Step();

  Stats stats() const;

 private:
  fleet::EventLog* const log_;
  fleet::SnapshotStore* const store_;
  const SnapshotConfig config_;
  SnapshotRoundOptions round_;
  const MonotonicClock* const clock_;
  const std::function<int64_t()> unix_ms_now_;
  SnapshotLease lease_;

  // The last round's start, or when the lease was taken.
  std::optional<MonotonicClock::TimePoint> due_from_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  Stats stats_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace kvindexer::replica

#endif  // KVINDEXER_REPLICA_SNAPSHOT_SCHEDULER_H_
