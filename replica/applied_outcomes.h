// AppliedOutcomes: what the replica's own reader made of the records it
// applied, for the replica's write-through (replica/write_through.h), which
// appended a record and answers its caller with the outcome the Indexer
// produced at that record's position (docs/fleet.md, "Writes through a
// replica").
//
// The follower (replica/log_follower.h) reports every position it passes:
// with the record's result when it applied one, without when it skipped it
// (trimmed) or covered it by a reloaded snapshot. Results are kept only
// while a watch is open, since only a writer that opened one before it
// appended can ask for them, and at most kMaxKept of them (the oldest go
// first). It also tracks the log position the replica's index holds
// exactly, which a skip loses and a reloaded snapshot gives back.
//
// Thread safety: every method may be called from any thread.
#ifndef KVINDEXER_REPLICA_APPLIED_OUTCOMES_H_
#define KVINDEXER_REPLICA_APPLIED_OUTCOMES_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

#include "absl/status/statusor.h"
#include "replica/record_applier.h"

namespace kvindexer::replica {

class AppliedOutcomes {
 public:
  static constexpr size_t kMaxKept = 65536;

  // Keeps results while it lives. REQUIRES: the AppliedOutcomes outlives it.
  class Watch {
   public:
    explicit Watch(AppliedOutcomes& outcomes);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    AppliedOutcomes& outcomes_;
  };

  // The follower applied the record at `position` with `result`.
  void Applied(uint64_t position, const RecordResult& result);
  // The follower went past every position up to `position` without
  // applying them (trimmed, with no snapshot to reload): the index now
  // matches no position of the log.
  void Skipped(uint64_t position);
  // The index was replaced by a snapshot of the log at `position` (which
  // may be below a position already passed).
  void Reloaded(uint64_t position);

  // Waits up to `timeout` for the follower to pass `position`, and answers
  // its result. UNAVAILABLE when it did not pass it in time, or passed it
  // without a result this object kept (skipped, covered by a snapshot, or
  // applied while no watch was open). REQUIRES: the caller holds a Watch
  // opened before the record was appended.
  absl::StatusOr<RecordResult> WaitFor(uint64_t position,
                                       std::chrono::milliseconds timeout);

  // The highest position passed.
  uint64_t passed() const;
  // The log position whose state the index holds exactly: the last record
  // applied or snapshot reloaded, or 0 at first. nullopt after a skip,
  // until a snapshot is reloaded.
  std::optional<uint64_t> current() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable moved_;
  uint64_t passed_ = 0;
  std::optional<uint64_t> current_ = 0;
  size_t watches_ = 0;
  std::map<uint64_t, RecordResult> kept_;
};

}  // namespace kvindexer::replica

#endif  // KVINDEXER_REPLICA_APPLIED_OUTCOMES_H_
