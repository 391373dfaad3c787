#include "replica/replica_liveness.h"

#include "spdlog/spdlog.h"

namespace kvindexer::replica {

bool ReplicaLiveness::BeforeSweep(bool hearing, OperatorView& indexer,
                                  MonotonicClock::TimePoint now) {
  if (!hearing) {
    if (!paused_) {
      spdlog::warn(
          "liveness sweeps paused: this replica does not hear the fleet "
          "event log, so heartbeats cannot reach it");
    }
    paused_ = true;
    return false;
  }
  if (paused_) {
    indexer.RearmHeartbeatMarkers(now);
    spdlog::info(
        "liveness sweeps resumed: every marked worker has its whole TTL "
        "again from now");
    paused_ = false;
    return false;
  }
  return true;
}

}  // namespace kvindexer::replica
