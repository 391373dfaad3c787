// ReplicaLiveness: worker liveness on a fleet replica (docs/fleet.md,
// "Worker liveness on replicas"). Heartbeats reach a replica only through
// the event log, so a replica that cannot read the log, or lags it, must
// not clear workers for heartbeats it could not hear. Its sweeper asks this
// gate before each sweep: sweeps pause while the replica does not hear the
// log, and the first time it hears it again every marked worker gets its
// whole TTL anew instead of a sweep.
//
// Thread safety: none; the sweeper's thread calls it.
#ifndef KVINDEXER_REPLICA_REPLICA_LIVENESS_H_
#define KVINDEXER_REPLICA_REPLICA_LIVENESS_H_

#include "common/clock.h"
#include "core/operator_view.h"

namespace kvindexer::replica {

class ReplicaLiveness {
 public:
  // `hearing`: the replica reads the log and has caught up with it. True
  // when the sweep may run now. REQUIRES: indexer outlives the gate.
  bool BeforeSweep(bool hearing, OperatorView& indexer,
                   MonotonicClock::TimePoint now);

  bool paused() const { return paused_; }

 private:
  // A replica starts paused: until it has caught up, the heartbeats it
  // has applied are old.
  bool paused_ = true;
};

}  // namespace kvindexer::replica

#endif  // KVINDEXER_REPLICA_REPLICA_LIVENESS_H_
