#include "core/snapshot_staging.h"

#include <algorithm>
#include <chrono>
#include <new>
#include <utility>

#include "common/absl_view.h"
#include "common/log_text.h"
#include "common/uuid.h"
#include "core/request_validation.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace kvindexer {

struct SnapshotStaging::Transaction {
  std::string id;
  std::string stream_key;
  BeginInfo info;
  uint64_t expected = 0;
  // Reserved to exactly `expected` at Begin; sorted by (tier, block_hash)
  // once `validated`.
  std::vector<StagedPlacement> staged;
  // The last Begin or Append.
  TimePoint last_touch;
  // M2 and M5 passed; from then on staged.size() == expected, so no Append
  // can change `staged` again.
  bool validated = false;
};

struct SnapshotStaging::Ended {
  enum class Kind { kCommitted, kCancelled };
  Kind kind = Kind::kCommitted;
  std::string stream_key;
  uint64_t applied_seq = 0;
  TimePoint forget_at;
};

namespace {

// Ids are echoed in messages; whatever a client sent stays short and
// printable.
constexpr size_t kIdBytesShown = 64;

std::string ShowId(std::string_view id) { return LogText(id, kIdBytesShown); }

bool ByTierThenHash(const StagedPlacement& a, const StagedPlacement& b) {
  return a.tier != b.tier ? a.tier < b.tier : a.block_hash < b.block_hash;
}

}  // namespace

SnapshotStaging::SnapshotStaging(const StagingLimits& limits,
                                 const MonotonicClock& clock)
    : limits_(limits),
      clock_(clock),
      idle_timeout_(std::chrono::milliseconds(limits.idle_timeout_ms)) {}

SnapshotStaging::~SnapshotStaging() = default;

absl::StatusOr<std::string> SnapshotStaging::Begin(std::string_view stream_key,
                                                   uint64_t expected_placements,
                                                   BeginInfo info) {
  std::lock_guard<std::mutex> lock(mu_);
  const TimePoint now = clock_.Now();
  ExpireLocked(now);
  // The limits as if the stream's earlier transaction were already gone.
  const auto earlier = open_by_stream_.find(AbslView(stream_key));
  uint64_t reserved_by_others = reserved_;
  size_t open_others = open_.size();
  if (earlier != open_by_stream_.end()) {
    reserved_by_others -= open_.at(earlier->second)->expected;
    --open_others;
  }
  if (expected_placements > limits_.max_placements ||
      reserved_by_others > limits_.max_placements - expected_placements) {
    return absl::ResourceExhaustedError(
        fmt::format("snapshot staging needs {} placements; {} of {} are "
                    "reserved ({})",
                    expected_placements, reserved_by_others,
                    limits_.max_placements, kStagingMaxPlacementsVar));
  }
  if (open_others >= limits_.max_transactions) {
    return absl::ResourceExhaustedError(fmt::format(
        "snapshot staging has {} open transactions; maximum is "
        "{} ({})",
        open_others, limits_.max_transactions, kStagingMaxTransactionsVar));
  }
  auto tx = std::make_shared<Transaction>();
  try {
    tx->staged.reserve(expected_placements);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(fmt::format(
        "snapshot staging cannot allocate room for {} placements ({} bytes)",
        expected_placements, expected_placements * sizeof(StagedPlacement)));
  }
  if (earlier != open_by_stream_.end()) EndOpenLocked(earlier->second);
  tx->id = NewIdLocked();
  tx->stream_key = std::string(stream_key);
  tx->info = std::move(info);
  tx->expected = expected_placements;
  tx->last_touch = now;
  reserved_ += expected_placements;
  WatchDeadlineLocked(now + idle_timeout_);
  open_by_stream_[tx->stream_key] = tx->id;
  std::string id = tx->id;
  open_.emplace(id, std::move(tx));
  return id;
}

absl::StatusOr<uint64_t> SnapshotStaging::Append(
    std::string_view transaction_id,
    std::span<const PlacementInput> placements) {
  return Append(transaction_id, placements.size(),
                [placements](size_t i) { return placements[i]; });
}

absl::StatusOr<uint64_t> SnapshotStaging::Append(
    std::string_view transaction_id, size_t count,
    absl::FunctionRef<PlacementInput(size_t)> placement) {
  std::lock_guard<std::mutex> lock(mu_);
  const TimePoint now = clock_.Now();
  ExpireLocked(now);
  const auto it = open_.find(AbslView(transaction_id));
  if (it == open_.end()) return NotOpenLocked(transaction_id);
  Transaction& tx = *it->second;
  // P2 over the whole Append before anything is staged.
  for (size_t i = 0; i < count; ++i) {
    if (absl::Status s = ValidateTier(placement(i).tier); !s.ok()) return s;
  }
  const uint64_t staged = tx.staged.size();
  if (count > tx.expected - staged) {
    return absl::InvalidArgumentError(
        fmt::format("snapshot transaction {} expects {} placements; {} are "
                    "staged and this Append adds {}",
                    ShowId(transaction_id), tx.expected, staged, count));
  }
  for (size_t i = 0; i < count; ++i) {
    const PlacementInput in = placement(i);
    tx.staged.push_back(StagedPlacement{
        .block_hash = in.block_hash,
        .component_mask = in.component_mask,
        .block_size = in.block_size,
        .tier = static_cast<uint8_t>(in.tier),
    });
  }
  tx.last_touch = now;
  return tx.staged.size();
}

absl::StatusOr<SnapshotStaging::CommitPlan> SnapshotStaging::PrepareCommit(
    std::string_view transaction_id,
    absl::FunctionRef<absl::Status(std::string_view, const BeginInfo&)>
        check_stream) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(clock_.Now());
  const auto it = open_.find(AbslView(transaction_id));
  if (it == open_.end()) {
    const auto ended = ended_.find(AbslView(transaction_id));
    if (ended != ended_.end() &&
        ended->second.kind == Ended::Kind::kCommitted) {
      return CommitPlan(nullptr, ended->second.stream_key,
                        ended->second.applied_seq);
    }
    return NotOpenLocked(transaction_id);
  }
  std::shared_ptr<Transaction> tx = it->second;
  if (tx->staged.size() != tx->expected) {
    EndOpenLocked(tx->id);
    return absl::FailedPreconditionError(
        fmt::format("snapshot transaction {} declared {} placements but {} "
                    "are staged",
                    ShowId(transaction_id), tx->expected, tx->staged.size()));
  }
  if (absl::Status s = check_stream(tx->stream_key, tx->info); !s.ok()) {
    EndOpenLocked(tx->id);
    return s;
  }
  if (!tx->validated) {
    std::sort(tx->staged.begin(), tx->staged.end(), ByTierThenHash);
    const auto twice = std::adjacent_find(
        tx->staged.begin(), tx->staged.end(),
        [](const StagedPlacement& a, const StagedPlacement& b) {
          return a.tier == b.tier && a.block_hash == b.block_hash;
        });
    if (twice != tx->staged.end()) {
      const StagedPlacement duplicate = *twice;
      EndOpenLocked(tx->id);
      return absl::InvalidArgumentError(
          fmt::format("snapshot transaction {} stages block_hash {} at tier "
                      "{} more than once",
                      ShowId(transaction_id), duplicate.block_hash,
                      static_cast<unsigned>(duplicate.tier)));
    }
    tx->validated = true;
  }
  return CommitPlan(tx, tx->stream_key, tx->info.applied_seq);
}

void SnapshotStaging::FinishCommit(const CommitPlan& plan) {
  if (plan.already_committed()) return;
  std::lock_guard<std::mutex> lock(mu_);
  const TimePoint now = clock_.Now();
  ExpireLocked(now);
  const std::string& id = plan.tx_->id;
  if (open_.contains(id)) EndOpenLocked(id);
  RememberLocked(id, Ended{.kind = Ended::Kind::kCommitted,
                           .stream_key = plan.stream_key_,
                           .applied_seq = plan.applied_seq_,
                           .forget_at = now + idle_timeout_});
}

void SnapshotStaging::Abort(std::string_view transaction_id) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(clock_.Now());
  if (const auto it = open_.find(AbslView(transaction_id)); it != open_.end()) {
    EndOpenLocked(it->second->id);
  }
}

bool SnapshotStaging::Cancel(std::string_view stream_key) {
  std::lock_guard<std::mutex> lock(mu_);
  const TimePoint now = clock_.Now();
  ExpireLocked(now);
  const auto it = open_by_stream_.find(AbslView(stream_key));
  if (it == open_by_stream_.end()) return false;
  const std::string id = it->second;
  EndOpenLocked(id);
  RememberLocked(id, Ended{.kind = Ended::Kind::kCancelled,
                           .stream_key = std::string(stream_key),
                           .forget_at = now + idle_timeout_});
  return true;
}

size_t SnapshotStaging::ExpireIdle() {
  std::lock_guard<std::mutex> lock(mu_);
  return ExpireLocked(clock_.Now());
}

std::optional<uint64_t> SnapshotStaging::StagedPlacements(
    std::string_view stream_key) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(clock_.Now());
  const auto it = open_by_stream_.find(AbslView(stream_key));
  if (it == open_by_stream_.end()) return std::nullopt;
  return open_.at(it->second)->staged.size();
}

StagingStats SnapshotStaging::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(clock_.Now());
  StagingStats stats;
  stats.open_transactions = open_.size();
  stats.reserved_placements = reserved_;
  for (const auto& [id, tx] : open_) {
    stats.staged_placements += tx->staged.size();
    stats.allocated_placements += tx->staged.capacity();
  }
  return stats;
}

size_t SnapshotStaging::ExpireLocked(TimePoint now) {
  if (now < next_deadline_) return 0;
  TimePoint next = TimePoint::max();
  std::vector<std::string> idle;
  for (const auto& [id, tx] : open_) {
    const TimePoint deadline = tx->last_touch + idle_timeout_;
    if (now >= deadline) {
      idle.push_back(id);
    } else {
      next = std::min(next, deadline);
    }
  }
  uint64_t freed = 0;
  for (const std::string& id : idle) {
    freed += open_.at(id)->expected;
    EndOpenLocked(id);
  }
  absl::erase_if(ended_, [&](const auto& entry) {
    if (now >= entry.second.forget_at) return true;
    next = std::min(next, entry.second.forget_at);
    return false;
  });
  next_deadline_ = next;
  if (!idle.empty()) {
    spdlog::info(
        "snapshot staging: {} transaction(s) expired after {} ms without a "
        "Begin or Append ({}); {} reserved placements freed",
        idle.size(), limits_.idle_timeout_ms, kStagingIdleTimeoutMsVar, freed);
  }
  return idle.size();
}

void SnapshotStaging::EndOpenLocked(std::string transaction_id) {
  const auto it = open_.find(AbslView(transaction_id));
  if (it == open_.end()) return;
  const std::shared_ptr<Transaction> tx = std::move(it->second);
  open_.erase(it);
  reserved_ -= tx->expected;
  if (const auto s = open_by_stream_.find(tx->stream_key);
      s != open_by_stream_.end() && s->second == transaction_id) {
    open_by_stream_.erase(s);
  }
}

void SnapshotStaging::RememberLocked(std::string transaction_id, Ended ended) {
  WatchDeadlineLocked(ended.forget_at);
  ended_.insert_or_assign(std::move(transaction_id), std::move(ended));
}

void SnapshotStaging::WatchDeadlineLocked(TimePoint deadline) {
  next_deadline_ = std::min(next_deadline_, deadline);
}

absl::Status SnapshotStaging::NotOpenLocked(
    std::string_view transaction_id) const {
  const auto ended = ended_.find(AbslView(transaction_id));
  if (ended == ended_.end()) {
    return absl::NotFoundError(fmt::format(
        "snapshot transaction {} is unknown: never begun, aborted, ended by "
        "a refused Commit, superseded by a later Begin for its stream, or "
        "idle longer than {} ms ({})",
        ShowId(transaction_id), limits_.idle_timeout_ms,
        kStagingIdleTimeoutMsVar));
  }
  if (ended->second.kind == Ended::Kind::kCommitted) {
    return absl::FailedPreconditionError(
        fmt::format("snapshot transaction {} is already committed",
                    ShowId(transaction_id)));
  }
  return absl::FailedPreconditionError(
      fmt::format("snapshot transaction {} was cancelled: its stream was "
                  "removed or invalidated",
                  ShowId(transaction_id)));
}

std::string SnapshotStaging::NewIdLocked() const {
  std::string id = NewRandomUuid();
  while (open_.contains(id) || ended_.contains(id)) id = NewRandomUuid();
  return id;
}

SnapshotStaging::CommitPlan::CommitPlan(std::shared_ptr<const Transaction> tx,
                                        std::string stream_key,
                                        uint64_t applied_seq)
    : tx_(std::move(tx)),
      stream_key_(std::move(stream_key)),
      applied_seq_(applied_seq) {}

uint64_t SnapshotStaging::CommitPlan::applied_seq() const {
  return applied_seq_;
}

const std::string& SnapshotStaging::CommitPlan::stream_key() const {
  return stream_key_;
}

const SnapshotStaging::BeginInfo& SnapshotStaging::CommitPlan::info() const {
  return tx_->info;
}

std::span<const StagedPlacement> SnapshotStaging::CommitPlan::placements()
    const {
  return tx_->staged;
}

std::span<const StagedPlacement>
SnapshotStaging::CommitPlan::placements_at_tier(uint32_t tier) const {
  const std::span<const StagedPlacement> all = placements();
  const auto first = std::partition_point(
      all.begin(), all.end(),
      [tier](const StagedPlacement& p) { return p.tier < tier; });
  const auto last = std::partition_point(
      first, all.end(),
      [tier](const StagedPlacement& p) { return p.tier == tier; });
  return {first, last};
}

}  // namespace kvindexer
