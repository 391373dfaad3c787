// LogSilence: how long a replica has gone without an answer from the fleet
// event log, and the rule that turns a long silence into a reason not to
// route to it (docs/fleet.md, "A replica cut off from the log").
//
// A replica that cannot reach NATS still holds its index and answers
// reads, and nothing in that index shows that it has stopped moving: its
// lag is measured against the last log end it heard of. So the follower
// notes every answer the log gives it (Heard: a Bounds, a Read with or
// without records, a snapshot reload), and once more than max_silence has
// passed since the latest one the replica is not to be served until it
// hears the log again and has caught up. A max_silence of zero turns the
// rule off.
//
// Time is passed in by the caller, so the rule is tested with a fake clock.
//
// Thread safety: every method may be called concurrently.
#ifndef KVINDEXER_REPLICA_LOG_SILENCE_H_
#define KVINDEXER_REPLICA_LOG_SILENCE_H_

#include <atomic>
#include <chrono>
#include <optional>
#include <string>

#include "common/clock.h"

namespace kvindexer::replica {

class LogSilence {
 public:
  using TimePoint = MonotonicClock::TimePoint;

  // The silence counts from `start` until the first Heard.
  // REQUIRES: max_silence >= 0.
  LogSilence(std::chrono::milliseconds max_silence, TimePoint start);

  // The log answered at `now`. An earlier time than one already noted is
  // ignored.
  void Heard(TimePoint now);

  // How long the log has not answered at `now`, rounded up to whole
  // milliseconds (zero when `now` precedes the latest answer).
  std::chrono::milliseconds Since(TimePoint now) const;
  // More than max_silence since the latest answer; never while off.
  bool Exceeded(TimePoint now) const;
  // Why the replica is not to be served at `now`, naming the variable;
  // nullopt unless Exceeded(now).
  std::optional<std::string> Reason(TimePoint now) const;

  bool enabled() const { return max_silence_.count() > 0; }
  std::chrono::milliseconds max_silence() const { return max_silence_; }

 private:
  const std::chrono::milliseconds max_silence_;
  // The latest answer, as TimePoint::time_since_epoch().count().
  std::atomic<TimePoint::rep> heard_;
};

}  // namespace kvindexer::replica

#endif  // KVINDEXER_REPLICA_LOG_SILENCE_H_
