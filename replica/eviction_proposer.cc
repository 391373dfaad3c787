#include "replica/eviction_proposer.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/stream_key.h"
#include "kvindexer_fleet.pb.h"
#include "spdlog/spdlog.h"

namespace kvindexer::replica {
namespace {

std::string EncodeProposal(const std::vector<PlannedEviction>& plan,
                           uint64_t decided_at, const std::string& producer) {
  ::kvindexer::fleet::v1::LogRecord record;
  record.set_producer(producer);
  ::kvindexer::fleet::v1::PlacementEvictions* body =
      record.mutable_placement_evictions();
  body->set_decided_at(decided_at);
  for (const PlannedEviction& planned : plan) {
    ::kvindexer::state::v1::PlacementEviction* e = body->add_evictions();
    SetStreamFields(planned.worker_id, e);
    e->set_tier(planned.tier);
    e->set_reason(static_cast<uint32_t>(planned.reason));
  }
  return record.SerializeAsString();
}

}  // namespace

EvictionProposer::EvictionProposer(fleet::EventLog& log, OperatorView& view,
                                   std::string producer)
    : log_(log), view_(view), producer_(std::move(producer)) {}

void EvictionProposer::AfterPass(uint64_t applied, bool caught_up) {
  if (!caught_up || applied < awaiting_) return;
  if (looked_ && applied == looked_at_) return;
  const std::vector<PlannedEviction> plan = view_.PlanIndexEvictions();
  if (plan.empty()) {
    looked_ = true;
    looked_at_ = applied;
    return;
  }
  absl::StatusOr<uint64_t> last = log_.LastPositionOf(fleet::kEvictionLogKey);
  if (!last.ok()) {
    failed_.fetch_add(1, std::memory_order_relaxed);
    looked_ = false;
    return;
  }
  // An earlier proposal this replica has not applied yet: it may already
  // bring the index within the bound.
  if (*last > applied) {
    looked_ = true;
    looked_at_ = applied;
    return;
  }
  // Same state, same plan, same id: a retry of an append the log may have
  // taken is recognised as its duplicate.
  const std::string dedup_id =
      absl::StrCat("evict-", producer_, "-", applied, "-", *last);
  absl::StatusOr<fleet::AppendAck> ack =
      log_.Append(fleet::kEvictionLogKey,
                  EncodeProposal(plan, applied, producer_), dedup_id, *last);
  if (ack.ok()) {
    appended_.fetch_add(1, std::memory_order_relaxed);
    awaiting_ = ack->position;
    looked_ = true;
    looked_at_ = applied;
    spdlog::info(
        "placement bound: proposed {} index-wide evictions at log position "
        "{} (decided at {})",
        plan.size(), ack->position, applied);
    return;
  }
  if (absl::IsFailedPrecondition(ack.status())) {
    // Another replica's proposal is in the log now; its record comes.
    fenced_.fetch_add(1, std::memory_order_relaxed);
    looked_ = true;
    looked_at_ = applied;
    return;
  }
  failed_.fetch_add(1, std::memory_order_relaxed);
  looked_ = false;
  if (const uint64_t n = append_failures_.Count(); n != 0) {
    spdlog::warn(
        "placement bound: proposing evictions to the event log failed ({} "
        "times so far; retried after the next pass): {}",
        n, ack.status().ToString());
  }
}

EvictionProposalCounts EvictionProposer::counts() const {
  return EvictionProposalCounts{
      .appended = appended_.load(std::memory_order_relaxed),
      .fenced = fenced_.load(std::memory_order_relaxed),
      .failed = failed_.load(std::memory_order_relaxed),
  };
}

}  // namespace kvindexer::replica
