// SnapshotStaging: the table of staged-snapshot transactions
// (fleet-protocol.md, sections 6.2 to 6.4). Begin reserves room, Append
// stages placements, and Commit hands them to the caller, which installs
// them as one Replace of the stream; nothing staged is ever visible to
// queries. The table checks everything that needs only the transaction
// (P1-P3, M1, M2, M5, the limits of section 6.3); the caller checks the
// stream (S1-S5, M3, M4) and does the install.
//
// Keys. A transaction belongs to one stream, named by an opaque key (the
// stream's backend id: any bytes, 0x00 and 0xFF included), and a stream has
// at most one open transaction. A transaction is named by its id, a random
// version-4 UUID in lowercase hyphenated text, chosen at Begin. Ids that
// callers send are compared as bytes; any bytes are accepted.
//
// States of an id, and how Append and PrepareCommit answer them:
//
//   open       Append stages; PrepareCommit checks and hands out a plan.
//   committed  FinishCommit ended it. PrepareCommit answers that it is
//              committed, with Begin's applied_seq, so that a repeated
//              Commit answers OK and changes nothing; Append answers
//              FAILED_PRECONDITION.
//   cancelled  Cancel ended it (its stream was removed or invalidated):
//              FAILED_PRECONDITION.
//   unknown    never begun, aborted, superseded by a later Begin for its
//              stream, refused by a Commit check (M2-M5), expired, or
//              forgotten: NOT_FOUND.
//
// Time. An open transaction expires when it has had no Begin or Append for
// the idle timeout; its reservation is freed and the expiry logged at INFO.
// A committed or cancelled id is remembered for one idle timeout after its
// commit or cancel, then forgotten. Every call first expires what is due on
// the injected clock; ExpireIdle() does only that, for a periodic sweep.
//
// Memory. Begin allocates a buffer for exactly expected_placements
// placements of sizeof(StagedPlacement) = 24 bytes and counts them against
// StagingLimits::max_placements; Append copies into that buffer and never
// allocates. Untouched pages of a reserved buffer cost address space only.
// The buffer is freed when the transaction ends and no CommitPlan refers to
// it. A committed or cancelled id costs about a hundred bytes until it is
// forgotten.
//
// Thread safety: every method may be called concurrently; one internal
// mutex serialises them. The server calls them from its apply thread.
#ifndef KVINDEXER_CORE_SNAPSHOT_STAGING_H_
#define KVINDEXER_CORE_SNAPSHOT_STAGING_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "core/staging_limits.h"
#include "kvindexer/backend.h"

namespace kvindexer {

// One staged placement. parent_block_hash is never stored.
struct StagedPlacement {
  int64_t block_hash = 0;
  uint32_t component_mask = 0;
  uint32_t block_size = 0;
  uint8_t tier = 0;  // 1..3

  bool operator==(const StagedPlacement&) const = default;
};
static_assert(sizeof(StagedPlacement) == 24);

// A placement as a request carries it; the tier by its raw number, which
// Append checks.
struct PlacementInput {
  int64_t block_hash = 0;
  int32_t tier = 0;
  uint32_t component_mask = 0;
  uint32_t block_size = 0;
};

// The open transactions, for GetStats and the metrics.
struct StagingStats {
  uint64_t open_transactions = 0;
  // Sum of expected_placements over open transactions: what the budget
  // counts.
  uint64_t reserved_placements = 0;
  // Placements staged so far over open transactions.
  uint64_t staged_placements = 0;
  // Room the open transactions' buffers hold, in placements; equals
  // reserved_placements.
  uint64_t allocated_placements = 0;

  bool operator==(const StagingStats&) const = default;
};

class SnapshotStaging {
 public:
  using TimePoint = MonotonicClock::TimePoint;

  // Begin's metadata (ExternalKvSnapshotMetadata), kept for the caller's
  // checks at Commit and for the install.
  struct Metadata {
    std::string model;
    std::string worker_generation;
    uint32_t hash_schema_version = 0;
    uint32_t page_size = 0;
    bool is_bigram = false;
  };

  // What Begin fixed for the install. The table stores it and hands it
  // back; it never reads it except applied_seq.
  struct BeginInfo {
    std::string worker_address;
    std::string worker_epoch;
    // Answered by Commit, and by every repeated Commit.
    uint64_t applied_seq = 0;
    // Absent clears the stream's spec at install.
    std::optional<CacheSpec> cache_spec;
    Metadata metadata;
    // Which incarnation of the stream's record Begin saw, so that Commit can
    // tell a record removed or replaced since (M3). Opaque to the table.
    uint64_t record_token = 0;
  };

  class CommitPlan;

  // REQUIRES: `clock` outlives the table; limits within the ranges of
  // server/staging_config.h (every value positive).
  SnapshotStaging(const StagingLimits& limits, const MonotonicClock& clock);
  ~SnapshotStaging();
  SnapshotStaging(const SnapshotStaging&) = delete;
  SnapshotStaging& operator=(const SnapshotStaging&) = delete;

  // Opens a transaction for `stream_key` reserving `expected_placements`
  // (0 allowed) and returns its id. The stream's open transaction, if any,
  // ends and its id is forgotten, but only once the new one fits: the
  // limits are checked as if it were already gone, and a refused Begin
  // changes nothing. RESOURCE_EXHAUSTED when the reservation does not fit
  // StagingLimits::max_placements (the message is section 6.3's, verbatim),
  // when the open transactions would exceed max_transactions, or when the
  // buffer cannot be allocated.
  [[nodiscard]] absl::StatusOr<std::string> Begin(std::string_view stream_key,
                                                  uint64_t expected_placements,
                                                  BeginInfo info);

  // Stages `count` placements, the i-th being placement(i), after the ones
  // staged before, and returns how many are staged in all. First failure
  // wins, and a refusal stages nothing: P1 the id is not open (NOT_FOUND
  // when unknown, FAILED_PRECONDITION when committed or cancelled); P2 a
  // tier outside 1..3, with Replace's message (INVALID_ARGUMENT); P3 more
  // than expected_placements in all (INVALID_ARGUMENT). Success, even of no
  // placement, restarts the idle timer. `placement` may be called twice
  // per index and must not call back into the table.
  [[nodiscard]] absl::StatusOr<uint64_t> Append(
      std::string_view transaction_id, size_t count,
      absl::FunctionRef<PlacementInput(size_t)> placement);
  [[nodiscard]] absl::StatusOr<uint64_t> Append(
      std::string_view transaction_id,
      std::span<const PlacementInput> placements);

  // The table's share of Commit, in section 6.2's order, first failure
  // winning:
  //   M1  unknown: NOT_FOUND; cancelled: FAILED_PRECONDITION. Committed:
  //       a plan with already_committed() (the caller answers OK with its
  //       applied_seq and changes nothing); nothing below runs.
  //   M2  staged != expected_placements: FAILED_PRECONDITION.
  //   M3, M4  `check_stream(stream_key, info)`, the caller's checks of
  //       the stream against Begin's info; its error is returned as it is.
  //   M5  a (block_hash, tier) staged twice: INVALID_ARGUMENT.
  // A failure of M2-M5 ends the transaction and frees its reservation.
  // Otherwise the transaction stays open, with its placements sorted by
  // (tier, block_hash), and the plan refers to them: the caller installs
  // and then calls FinishCommit, or on a transient failure answers its
  // error and leaves the transaction for a retried Commit. Preparing does
  // not restart the idle timer. `check_stream` runs under the table's mutex
  // and must not call back into the table.
  [[nodiscard]] absl::StatusOr<CommitPlan> PrepareCommit(
      std::string_view transaction_id,
      absl::FunctionRef<absl::Status(std::string_view, const BeginInfo&)>
          check_stream);

  // The caller installed `plan`: its transaction ends, its reservation is
  // freed, and its id is remembered as committed with Begin's applied_seq.
  // Should the id have stopped being open in between (another caller's
  // Begin, Abort or Cancel, or expiry), it is remembered as committed all
  // the same. A plan that is already_committed() changes nothing.
  void FinishCommit(const CommitPlan& plan);

  // Ends an open transaction and frees its reservation. Ids that are not
  // open are left as they are. Always succeeds.
  void Abort(std::string_view transaction_id);

  // The stream was removed or invalidated: its open transaction, if any,
  // ends, its reservation is freed, and its id is remembered as cancelled.
  // Returns whether there was one.
  bool Cancel(std::string_view stream_key);

  // Expires what is due now; returns how many open transactions expired.
  size_t ExpireIdle();

  // Placements staged by the stream's open transaction; nullopt when it has
  // none (ListWorkers' staged_placements).
  std::optional<uint64_t> StagedPlacements(std::string_view stream_key);

  StagingStats Stats();

 private:
  struct Transaction;
  struct Ended;

  // Each REQUIRES mu_.
  size_t ExpireLocked(TimePoint now);
  // Ends the transaction if it is open and frees its reservation. The id
  // is taken by value, since callers pass keys of the maps it erases from.
  void EndOpenLocked(std::string transaction_id);
  void RememberLocked(std::string transaction_id, Ended ended);
  void WatchDeadlineLocked(TimePoint deadline);
  absl::Status NotOpenLocked(std::string_view transaction_id) const;
  std::string NewIdLocked() const;

  const StagingLimits limits_;
  const MonotonicClock& clock_;
  const MonotonicClock::Duration idle_timeout_;

  std::mutex mu_;
  // Open transactions by id; a CommitPlan may share one.
  absl::flat_hash_map<std::string, std::shared_ptr<Transaction>> open_;
  // stream key -> the id of its open transaction.
  absl::flat_hash_map<std::string, std::string> open_by_stream_;
  // Committed and cancelled ids, until forgotten.
  absl::flat_hash_map<std::string, Ended> ended_;
  // Sum of expected_placements over open_.
  uint64_t reserved_ = 0;
  // No deadline of open_ or ended_ falls before it.
  TimePoint next_deadline_ = TimePoint::max();
};

// What PrepareCommit hands out: either "already committed", or the staged
// placements and Begin's info to install. A plan owns what it refers to,
// so it stays valid whatever the table does afterwards; nothing in it
// changes while the plan lives.
class SnapshotStaging::CommitPlan {
 public:
  // The transaction was committed before: answer OK with applied_seq()
  // and change nothing. stream_key() is valid; info() and placements()
  // must not be called.
  bool already_committed() const { return tx_ == nullptr; }
  // Begin's applied_seq: Commit's answer.
  uint64_t applied_seq() const;
  const std::string& stream_key() const;
  const BeginInfo& info() const;
  // Every staged placement, sorted by (tier, block_hash), each
  // (block_hash, tier) once.
  std::span<const StagedPlacement> placements() const;
  // The run of placements() at `tier` (empty for a tier with none).
  std::span<const StagedPlacement> placements_at_tier(uint32_t tier) const;

 private:
  friend class SnapshotStaging;
  CommitPlan(std::shared_ptr<const Transaction> tx, std::string stream_key,
             uint64_t applied_seq);

  std::shared_ptr<const Transaction> tx_;  // null when already committed
  std::string stream_key_;
  uint64_t applied_seq_ = 0;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_SNAPSHOT_STAGING_H_
