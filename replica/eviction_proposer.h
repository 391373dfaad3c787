// EvictionProposer: how a fleet of replicas keeps one index-wide placement
// bound (KV_INDEXER_MAX_PLACEMENTS; docs/fleet.md, "The placement bound on
// replicas"). Replicas do not decide index-wide evictions where they apply
// a record: their totals differ while their liveness sweeps, each on its
// own clock, have cleared different workers. Instead, a replica at the
// log's end whose index is over the bound plans the evictions
// (OperatorView::PlanIndexEvictions) and appends them to the event log as
// one placement_evictions record (replica/record_applier.h) with the share
// they were planned against; every replica, the proposer included, applies
// that record where it lies in the log, so all of them clear the same
// tiers at the same position, and none clears a stream that holds no more
// than the share there.
//
// One proposal at a time for the whole fleet: the append is fenced on the
// last record under kEvictionLogKey, and a replica proposes only once it
// has applied that record. Two replicas that plan at once both read the
// same last position; the log takes the first append and refuses the
// other (FAILED_PRECONDITION), whose replica then waits for the winner's
// record, applies it and plans again from there. A proposal whose answer
// was lost is found in the log on the next pass and waited for. A plan too
// large for one record is proposed in its first part (the plan is ordered,
// so a prefix is a plan of its own); the next pass proposes the rest.
//
// Between the mutation that takes the index over the bound and the
// eviction record, replicas hold more than the bound: what the fleet
// appends during one pass of the proposer's follower and one round trip.
//
// Thread safety: AfterPass is called by the follower's thread only;
// counts() from any thread.
#ifndef KVINDEXER_REPLICA_EVICTION_PROPOSER_H_
#define KVINDEXER_REPLICA_EVICTION_PROPOSER_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"

#include "common/doubling_throttle.h"
#include "core/operator_view.h"
#include "fleet/event_log.h"

namespace kvindexer::replica {

// Proposals by how the log answered them.
struct EvictionProposalCounts {
  uint64_t appended = 0;  // in the log (or already there, as a duplicate)
  uint64_t fenced = 0;    // another replica's proposal came first
  uint64_t failed = 0;    // the log could not be reached or refused it
};

class EvictionProposer {
 public:
  // `producer` names this replica in its records and de-duplication ids.
  // REQUIRES: `log` and `view` outlive the proposer.
  EvictionProposer(fleet::EventLog& log, OperatorView& view,
                   std::string producer);

  // After each pass of the log follower: `applied` is the last position it
  // has applied; `at_head` whether it is caught up and within one read
  // batch of the log's end. Proposes the index-wide evictions the index
  // needs when at_head, every earlier proposal and its own are applied,
  // the backend has not failed, and something was applied since it last
  // looked (or that look could not reach the log).
  void AfterPass(uint64_t applied, bool at_head);

  EvictionProposalCounts counts() const;

 private:
  // Counts and logs (throttled) a call to the log that failed; unless the
  // log refused the record itself, the next pass looks again.
  void Failed(const absl::Status& status);

  fleet::EventLog& log_;
  OperatorView& view_;
  const std::string producer_;
  // The applied position at the last completed look; a failed one leaves
  // it, so that the next pass looks again.
  uint64_t looked_at_ = 0;
  bool looked_ = false;
  // This replica's last proposal's position: nothing is proposed until it
  // is applied.
  uint64_t awaiting_ = 0;
  std::atomic<uint64_t> appended_{0};
  std::atomic<uint64_t> fenced_{0};
  std::atomic<uint64_t> failed_{0};
  DoublingThrottle failures_;
};

}  // namespace kvindexer::replica

#endif  // KVINDEXER_REPLICA_EVICTION_PROPOSER_H_
