// SnapshotLease: which replica writes snapshots (docs/fleet.md, "The
// snapshot lease"). The lease is a fleet::LeaseRegister holding the holder's
// name; the holder rewrites it every third of the TTL, and another replica
// takes it over, by a compare-and-set on the revision it saw, once that
// revision has not changed for a whole TTL on its own clock. No two clocks are
// compared, so the replicas' clocks need not agree.
//
// The lease saves work, it does not carry correctness: two replicas that
// both believe they hold it (a holder paused past its TTL) write two
// snapshots of the same log, each correct, and retention keeps the newest.
//
// Thread safety: none; one scheduler thread calls Tick.
#ifndef KVINDEXER_REPLICA_SNAPSHOT_LEASE_H_
#define KVINDEXER_REPLICA_SNAPSHOT_LEASE_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "common/clock.h"
#include "fleet/lease_register.h"

namespace kvindexer::replica {

class SnapshotLease {
 public:
  // REQUIRES: reg and clock outlive the lease; `name` unique per process
  // (a restarted replica must not inherit its old lease by name);
  // ttl >= 3 ms.
  SnapshotLease(fleet::LeaseRegister* reg, std::string name,
                std::chrono::milliseconds ttl, const MonotonicClock* clock);

  // Renews, takes or watches the lease as due; true while this replica
  // holds it. An unreachable register keeps a held lease only until two
  // thirds of the TTL have passed since the last renewal, the point from
  // which another replica could take it over.
  bool Tick();

  // Gives the lease up so that another replica can take it at once
  // (shutdown). Errors are ignored: the lease then expires on its own.
  void Release();

  bool held() const { return held_; }
  // Why the last Tick could not reach the register, for the log; OK when it
  // could.
  const absl::Status& last_error() const { return last_error_; }

 private:
  bool TryTake(const fleet::LeaseRegister::Entry* seen);

  fleet::LeaseRegister* const reg_;
  const std::string name_;
  const std::chrono::milliseconds ttl_;
  const MonotonicClock* const clock_;

  bool held_ = false;
  uint64_t revision_ = 0;  // ours while held
  MonotonicClock::TimePoint renewed_at_{};
  // Watching another holder: the revision seen and since when.
  std::optional<uint64_t> seen_revision_;
  MonotonicClock::TimePoint seen_since_{};
  absl::Status last_error_;
};

}  // namespace kvindexer::replica

#endif  // KVINDEXER_REPLICA_SNAPSHOT_LEASE_H_
