// LogFollower: the thread that makes a server a replica of the fleet event
// log (docs/fleet.md, "Replicas follow the log"). It reads the log in order
// from a start position and hands every record to the Indexer through
// ApplyLogRecord, the one path by which records change an index, so
// that every replica of the same log holds the same contents.
//
// What it does with each kind of record or failure:
//   - applied: the Indexer took it;
//   - refused: the Indexer answered an error (a sequence gap, a gate
//     refusal, a bound). Counted by status code and skipped: the log is the
//     truth, and every replica refuses the same record the same way;
//   - undecodable: not a log record, or misfiled. Skipped alone, counted,
//     logged at most at each power-of-two total (common/doubling_throttle.h);
//   - trimmed: positions the follower expected but the log no longer holds
//     (the first record read lies beyond the one asked for, or the log
//     starts beyond it). With a reload callback the follower empties the
//     index into the newest snapshot and reads on from the position after
//     it, NOT_SERVING meanwhile; a failed reload is retried like a failed
//     read. Without one, or when the store holds no snapshot, the gone
//     positions are counted, logged and skipped: the replica reads on
//     without their effect. Positions a snapshot does not cover either are
//     skipped the same way;
//   - a staged commit in the payload form (replica/commit_payload.h): its
//     placements are fetched from options.payloads and the record applied
//     as if it carried them. While the fetch fails the follower stays at
//     that record, NOT_SERVING, and tries again after the retry wait; a
//     payload gone because the log was trimmed past its record is a trimmed
//     position (above). A payload that does not match its record
//     (DATA_LOSS) makes the record undecodable, on every replica alike.
//     Without a store such a record is undecodable;
//   - a failed read (the log unreachable): retried after a capped, doubling
//     wait that Stop cuts short; nothing is skipped.
//
// Position and readiness: applied_position() is the last position handed to
// the Indexer (or skipped as trimmed, or covered by a reloaded snapshot); lag()
// is the log's last position, as EventLog::Bounds() answered it at the top of
// the latest loop, minus that. caught_up() once the follower has passed its
// catch-up target, and while lag() <= max_lag_records, no reload is under
// way, no payload is awaited and the log has not been silent for longer
// than max_silence
// (replica/log_silence.h). The catch-up target is the last position the log
// had when it first answered Bounds, and again the one it has at the first
// Bounds after such a silence: a replica cut off from the log serves again
// only once it has read what was appended meanwhile. The server reports
// NOT_SERVING whenever caught_up() is false (server/serving_health.h).
//
// Time: the follower waits in EventLog::Read (read_wait) and between
// retries, and nowhere else. Silence is measured with options.clock; a
// second thread (kvidx-log-watch, only while max_silence > 0) re-evaluates
// readiness every tenth of max_silence (at least 10 ms, at most 250 ms), so
// that the decision changes on time while the follower's own thread is
// blocked in a call to a log that does not answer. Stop returns within one
// read wait plus the record being applied, unless a log call blocks longer.
//
// Thread safety: the accessors may be called from any thread at any time.
// Start and Stop may not be called concurrently with each other.
#ifndef KVINDEXER_REPLICA_LOG_FOLLOWER_H_
#define KVINDEXER_REPLICA_LOG_FOLLOWER_H_

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/doubling_throttle.h"
#include "core/indexer.h"
#include "fleet/event_log.h"
#include "fleet/snapshot_store.h"
#include "replica/applied_outcomes.h"
#include "replica/event_source_config.h"
#include "replica/log_silence.h"

namespace kvindexer::replica {

struct LogFollowerOptions {
  // The first position to read (1: the whole log).
  uint64_t start_position = 1;
  // Records asked for per read, and how long a read waits for the first one.
  size_t batch_records = 512;
  std::chrono::milliseconds read_wait{200};
  // caught_up() is false while lag() exceeds this.
  uint64_t max_lag_records = kDefaultFleetMaxLagRecords;
  // caught_up() is false once the log has not answered for longer than
  // this, until it answers and the follower has caught up again. Zero: off.
  std::chrono::milliseconds max_silence = kDefaultFleetMaxSilence;
  // Where silence is measured. REQUIRES: outlives the follower.
  const MonotonicClock* clock = &MonotonicClock::Real();
  // The wait after a failed read or Bounds: doubling from retry_initial up
  // to retry_cap, back to retry_initial after a success.
  std::chrono::milliseconds retry_initial{100};
  std::chrono::milliseconds retry_cap{5000};
  // Called with the reason the replica is not to be served (nullopt:
  // caught up) when that decision changes, and once with the first
  // decision; on the follower's thread or its watch thread, never on two
  // at once. Null: not called. Must not call Stop.
  std::function<void(std::optional<std::string> behind)> on_readiness;
  // Called on the follower's thread when positions it still needs are gone
  // from the log: empties the index, loads the newest snapshot into it and
  // answers the last position that snapshot covers; nullopt when the store
  // holds none (the index left as it was). An error may leave the index
  // partly emptied: the follower stays not ready and calls it again after
  // the retry wait. Null: gone positions are skipped. Must not call Stop.
  std::function<absl::StatusOr<std::optional<uint64_t>>()> reload;
  // Told every position the follower passes, with the record's result when
  // it applied one (replica/applied_outcomes.h). Null: nobody is told.
  // REQUIRES: outlives the follower.
  AppliedOutcomes* outcomes = nullptr;
  // Where staged commits in the payload form keep their placements (the
  // fleet's snapshot store). Null: such records are undecodable.
  // REQUIRES: outlives the follower.
  fleet::SnapshotStore* payloads = nullptr;
  // Called on the follower's thread after every pass that reached the log,
  // with applied_position() and whether the follower is caught_up() with
  // lag() at most batch_records (the index-wide placement bound's
  // proposer, replica/eviction_proposer.h). Null: not called. Must not
  // call Stop.
  std::function<void(uint64_t applied, bool at_head)> after_pass = nullptr;
};

// The records seen, by outcome.
struct LogFollowerCounts {
  uint64_t applied = 0;
  uint64_t refused = 0;
  uint64_t undecodable = 0;
  uint64_t trimmed = 0;
  uint64_t read_failures = 0;     // failed Read or Bounds calls, not records
  uint64_t reloads = 0;           // snapshots loaded over trimmed positions
  uint64_t reload_failures = 0;   // reload calls that answered an error
  uint64_t payload_failures = 0;  // failed fetches of a commit's payload
};

class LogFollower {
 public:
  // REQUIRES: `log` and `indexer` outlive this object;
  // options.start_position >= 1, batch_records >= 1,
  // retry_initial > 0, retry_cap >= retry_initial. OWNERSHIP: not taken.
  LogFollower(fleet::EventLog& log, Indexer& indexer,
              LogFollowerOptions options);
  // Stops the thread.
  ~LogFollower();
  LogFollower(const LogFollower&) = delete;
  LogFollower& operator=(const LogFollower&) = delete;

  // Starts the thread (named kvidx-follower) and, with max_silence > 0, the
  // watch thread; the silence counts from here. REQUIRES: called at most
  // once.
  void Start();
  // Lets the record being applied finish, then ends the threads. Bounded by
  // one read wait, unless a log call blocks longer. Idempotent; also fine
  // before Start.
  void Stop();

  uint64_t applied_position() const {
    return applied_.load(std::memory_order_acquire);
  }
  // The log's last position as last seen (at least applied_position()).
  uint64_t log_last_position() const {
    return log_last_.load(std::memory_order_acquire);
  }
  uint64_t lag() const;
  bool caught_up() const;
  // Why the replica is not to be served, nullopt when caught_up().
  std::optional<std::string> NotReadyReason() const;
  uint64_t max_lag_records() const { return options_.max_lag_records; }
  // How long the log has not answered, as options.clock tells it.
  std::chrono::milliseconds silence() const {
    return silence_.Since(options_.clock->Now());
  }

  // True while the log answers: the latest Bounds and Read both succeeded.
  // False before the first pass and after a failed call. A replica's
  // liveness sweeps pause while it is false (docs/fleet.md, "Worker
  // liveness on replicas").
  bool in_contact() const {
    return in_contact_.load(std::memory_order_acquire);
  }

  LogFollowerCounts counts() const;
  // Records refused with `code`.
  uint64_t refused_with(absl::StatusCode code) const;

 private:
  void Run();
  // The watch thread: Report every tick until Stop.
  void Watch();
  // NotReadyReason at `now`.
  std::optional<std::string> ReasonAt(MonotonicClock::TimePoint now) const;
  // The log answered at `now`: ends a silence; after one longer than the
  // bound, the next Bounds sets a new catch-up target.
  void Heard(MonotonicClock::TimePoint now);
  // One pass: Bounds, Read, hand over. False after a failed call.
  bool Step();
  // A record from Read, at next_ or before it: applies it (kTaken), or
  // stops the batch: after a reload over a payload the trim took
  // (kReadAgain), or after a failed payload fetch and its retry wait
  // (kFailed).
  enum class TakeOutcome { kTaken, kReadAgain, kFailed };
  TakeOutcome Take(const fleet::LoggedRecord& record);
  // The payload of the commit at `record` could not be fetched.
  TakeOutcome PayloadUnavailable(const fleet::LoggedRecord& record,
                                 const absl::Status& failure);
  // Positions [next_, position) are gone from the log: reloads a snapshot
  // over them, or skips them.
  enum class GapOutcome { kSkipped, kReloaded, kReloadFailed };
  GapOutcome CloseGap(uint64_t position);
  void SkipTrimmed(uint64_t position);
  void ObserveLast(uint64_t last);
  // Reports readiness through on_readiness when it changed, and logs a
  // silence beyond the bound once. Called by both threads.
  void Report();
  // Counts a failed call, then waits for the retry delay or Stop.
  void WaitToRetry(const absl::Status& failure);
  // Waits for the retry delay or Stop, doubling the next one.
  void Backoff();
  bool stopping() const;

  fleet::EventLog& log_;
  Indexer& indexer_;
  const LogFollowerOptions options_;

  // Only the follower's thread writes these; anyone reads them.
  std::atomic<uint64_t> applied_;
  std::atomic<uint64_t> log_last_;
  // Set once the follower has passed catch_up_target_; cleared when the
  // log answers after a silence beyond the bound.
  std::atomic<bool> reached_target_{false};
  std::atomic<bool> in_contact_{false};
  // From a gap's discovery until a reload over it succeeded.
  std::atomic<bool> reloading_{false};
  // The position of the commit whose payload could not be fetched, until
  // it is; 0: none.
  std::atomic<uint64_t> awaiting_payload_{0};
  std::atomic<uint64_t> payload_failures_{0};
  uint64_t payload_streak_ = 0;  // failed fetches in a row; follower thread
  std::atomic<uint64_t> applied_count_{0};
  std::atomic<uint64_t> refused_count_{0};
  std::atomic<uint64_t> trimmed_count_{0};
  std::atomic<uint64_t> read_failures_{0};
  std::atomic<uint64_t> reloads_{0};
  std::atomic<uint64_t> reload_failures_{0};
  std::array<std::atomic<uint64_t>, 17> refused_by_code_{};
  LogSilence silence_;
  DoublingThrottle undecodable_;
  DoublingThrottle refusals_logged_;

  // The follower's thread's own state.
  uint64_t next_;  // the next position to read
  // Bounds().last at the first answer, and at the first one after a
  // silence beyond the bound.
  std::optional<uint64_t> catch_up_target_;
  std::chrono::milliseconds retry_delay_;  // the next retry's wait
  uint64_t failure_streak_ = 0;

  // What Report decided last; guarded by report_mu_.
  std::mutex report_mu_;
  std::optional<bool> reported_ready_;
  bool ever_ready_ = false;
  bool silence_logged_ = false;  // the current silence was logged

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
  std::thread watch_thread_;
};

}  // namespace kvindexer::replica

#endif  // KVINDEXER_REPLICA_LOG_FOLLOWER_H_
