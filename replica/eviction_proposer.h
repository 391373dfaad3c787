// EvictionProposer: how a fleet of replicas keeps one index-wide placement
// bound (KV_INDEXER_MAX_PLACEMENTS; docs/fleet.md, "The placement bound on
// replicas"). Replicas do not decide index-wide evictions where they apply
// a record: their totals differ while their liveness sweeps, each on its
// own clock, have cleared different workers. Instead, a caught-up replica
// whose index is over the bound plans the evictions
// (OperatorView::PlanIndexEvictions) and appends them to the event log as
// one placement_evictions record (replica/record_applier.h); every replica,
// the proposer included, applies that record where it lies in the log, so
// all of them clear the same tiers at the same position.
//
// One proposal at a time for the whole fleet: the append is fenced on the
// last record under kEvictionLogKey, and a replica proposes only once it
// has applied that record. Two replicas that plan at once both read the
// same last position; the log takes the first append and refuses the
// other (FAILED_PRECONDITION), whose replica then waits for the winner's
// record, applies it and plans again from there. A proposal the log could
// not confirm (UNAVAILABLE) is retried after the next pass with the same
// de-duplication id while nothing was applied in between.
//
// Between the mutation that takes the index over the bound and the
// eviction record, replicas hold more than the bound: as much as the
// fleet appends in one round trip to the log.
//
// Thread safety: AfterPass is called by the follower's thread only;
// counts() from any thread.
#ifndef KVINDEXER_REPLICA_EVICTION_PROPOSER_H_
#define KVINDEXER_REPLICA_EVICTION_PROPOSER_H_

#include <atomic>
#include <cstdint>
#include <string>

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
  // has applied, `caught_up` whether it serves. Proposes the index-wide
  // evictions the index needs when this replica is caught up, has applied
  // every earlier proposal and its own, and something was applied since it
  // last looked (or that look failed).
  void AfterPass(uint64_t applied, bool caught_up);

  EvictionProposalCounts counts() const;

 private:
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
  DoublingThrottle append_failures_;
};

}  // namespace kvindexer::replica

#endif  // KVINDEXER_REPLICA_EVICTION_PROPOSER_H_
