// Watches publisher sequence numbers for gaps, duplicates and reorders
// (docs/bridge-events.md, "The ZMQ stream > Sequence numbers"). Diagnostic
// only: every batch is forwarded whatever the
// verdict. Also decides when the "not contiguous" WARN may be printed, so
// that a misbehaving publisher cannot flood the log: the first anomaly is
// reported at once, later ones at most once per interval with a count of
// those suppressed in between.
//
// Thread safety: not thread-safe.
#ifndef KVINDEXER_BRIDGE_SEQUENCE_TRACKER_H_
#define KVINDEXER_BRIDGE_SEQUENCE_TRACKER_H_

#include <chrono>
#include <cstdint>
#include <optional>

namespace kvindexer::bridge {

class SequenceTracker {
 public:
  using Clock = std::chrono::steady_clock;

  enum class Verdict {
    kFirst,       // no previous sequence number
    kContiguous,  // previous + 1 (with wrap-around)
    kGap,         // jumped forward; `missing` batches were never seen
    kDuplicate,   // equal to the previous one
    kReorder,     // went backwards (includes a publisher restart at 0)
  };

  struct Observation {
    Verdict verdict = Verdict::kFirst;
    uint64_t expected = 0;  // previous + 1, when there was a previous
    uint64_t missing = 0;   // kGap only
    // True when the caller should log the WARN now; `suppressed` anomalies
    // were not logged since the last WARN.
    bool log_now = false;
    uint64_t suppressed = 0;
  };

  explicit SequenceTracker(
      Clock::duration log_interval = std::chrono::seconds(10))
      : log_interval_(log_interval) {}

  Observation Observe(uint64_t seq, Clock::time_point now);

  uint64_t gaps() const { return gaps_; }
  uint64_t missing_batches() const { return missing_; }
  uint64_t duplicates() const { return duplicates_; }
  uint64_t reorders() const { return reorders_; }

 private:
  const Clock::duration log_interval_;
  std::optional<uint64_t> last_;
  std::optional<Clock::time_point> last_log_;
  uint64_t suppressed_ = 0;
  uint64_t gaps_ = 0;
  uint64_t missing_ = 0;
  uint64_t duplicates_ = 0;
  uint64_t reorders_ = 0;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_SEQUENCE_TRACKER_H_
