#include "replica/eviction_proposer.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/stream_key.h"
#include "kvindexer_fleet.pb.h"
#include "spdlog/spdlog.h"

namespace kvindexer::replica {
namespace {

// Bytes a repeated message field adds beyond its message: the tag and a
// length prefix of up to three bytes (records are far below 2 MiB).
constexpr size_t kEntryOverhead = 4;

// The record for the longest prefix of `plan` that fits in `max_bytes`;
// `*proposed` is its length (0 when not even the first eviction fits).
std::string EncodeProposal(const IndexEvictionPlan& plan, uint64_t decided_at,
                           const std::string& producer, size_t max_bytes,
                           size_t* proposed) {
  ::kvindexer::fleet::v1::LogRecord record;
  record.set_producer(producer);
  ::kvindexer::fleet::v1::PlacementEvictions* body =
      record.mutable_placement_evictions();
  body->set_decided_at(decided_at);
  body->set_share(plan.share);
  // Room for the body's own tag and length prefix.
  size_t size = record.ByteSizeLong() + 2 * kEntryOverhead;
  *proposed = 0;
  for (const PlannedEviction& planned : plan.evictions) {
    ::kvindexer::state::v1::PlacementEviction e;
    SetStreamFields(planned.worker_id, &e);
    e.set_tier(planned.tier);
    e.set_reason(static_cast<uint32_t>(planned.reason));
    const size_t entry = e.ByteSizeLong() + kEntryOverhead;
    if (size + entry > max_bytes) break;
    size += entry;
    *body->add_evictions() = std::move(e);
    ++*proposed;
  }
  return record.SerializeAsString();
}

}  // namespace

EvictionProposer::EvictionProposer(fleet::EventLog& log, OperatorView& view,
                                   std::string producer)
    : log_(log), view_(view), producer_(std::move(producer)) {}

void EvictionProposer::AfterPass(uint64_t applied, bool at_head) {
  if (!at_head || applied < awaiting_) return;
  if (looked_ && applied == looked_at_) return;
  // Done at this position unless a call to the log fails below.
  looked_ = true;
  looked_at_ = applied;
  // A backend that failed a mutation cannot continue (health says so); its
  // clears would fail again, proposal after proposal.
  if (view_.BackendFailure().has_value()) return;
  const IndexEvictionPlan plan = view_.PlanIndexEvictions();
  if (plan.evictions.empty()) return;
  absl::StatusOr<uint64_t> last = log_.LastPositionOf(fleet::kEvictionLogKey);
  if (!last.ok()) {
    Failed(last.status());
    return;
  }
  // An earlier proposal this replica has not applied yet: it may already
  // bring the index within the bound.
  if (*last > applied) return;
  size_t proposed = 0;
  const std::string payload = EncodeProposal(
      plan, applied, producer_, log_.max_payload_bytes(), &proposed);
  if (proposed == 0) {
    Failed(absl::InvalidArgumentError(
        "not one eviction fits in a record of the log's largest payload"));
    return;
  }
  // Same position, same plan, same id: a retry of an append the log may
  // have taken is recognised as its duplicate.
  const std::string dedup_id =
      absl::StrCat("evict-", producer_, "-", applied, "-", *last);
  absl::StatusOr<fleet::AppendAck> ack =
      log_.Append(fleet::kEvictionLogKey, payload, dedup_id, *last);
  if (ack.ok()) {
    appended_.fetch_add(1, std::memory_order_relaxed);
    awaiting_ = ack->position;
    spdlog::info(
        "placement bound: proposed {} of {} index-wide evictions (share {}) "
        "at log position {}, planned at {}",
        proposed, plan.evictions.size(), plan.share, ack->position, applied);
    return;
  }
  if (absl::IsFailedPrecondition(ack.status())) {
    fenced_.fetch_add(1, std::memory_order_relaxed);
    // Usually another replica's proposal, which this one waits for. A
    // fence lost to a trim of the last proposal has no winner to wait for:
    // looked at again on the next pass.
    absl::StatusOr<uint64_t> now = log_.LastPositionOf(fleet::kEvictionLogKey);
    if (!now.ok() || *now <= applied) looked_ = false;
    return;
  }
  Failed(ack.status());
}

void EvictionProposer::Failed(const absl::Status& status) {
  failed_.fetch_add(1, std::memory_order_relaxed);
  // INVALID_ARGUMENT (a record the log refuses) would be refused again at
  // once: looked at again only when the index changes.
  if (!absl::IsInvalidArgument(status)) looked_ = false;
  if (const uint64_t n = failures_.Count(); n != 0) {
    spdlog::warn(
        "placement bound: proposing index-wide evictions to the event log "
        "failed ({} times so far): {}",
        n, status.ToString());
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
