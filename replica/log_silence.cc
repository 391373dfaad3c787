#include "replica/log_silence.h"

#include "fmt/format.h"
#include "replica/event_source_config.h"

namespace kvindexer::replica {

LogSilence::LogSilence(std::chrono::milliseconds max_silence, TimePoint start)
    : max_silence_(max_silence), heard_(start.time_since_epoch().count()) {}

void LogSilence::Heard(TimePoint now) {
  const TimePoint::rep at = now.time_since_epoch().count();
  TimePoint::rep seen = heard_.load(std::memory_order_relaxed);
  while (seen < at &&
         !heard_.compare_exchange_weak(seen, at, std::memory_order_release,
                                       std::memory_order_relaxed)) {
  }
}

std::chrono::milliseconds LogSilence::Since(TimePoint now) const {
  const TimePoint heard{
      TimePoint::duration(heard_.load(std::memory_order_acquire))};
  if (now <= heard) return std::chrono::milliseconds(0);
  return std::chrono::ceil<std::chrono::milliseconds>(now - heard);
}

bool LogSilence::Exceeded(TimePoint now) const {
  if (!enabled()) return false;
  const TimePoint heard{
      TimePoint::duration(heard_.load(std::memory_order_acquire))};
  return now - heard > max_silence_;
}

std::optional<std::string> LogSilence::Reason(TimePoint now) const {
  if (!Exceeded(now)) return std::nullopt;
  return fmt::format(
      "no answer from the fleet event log for {} ms, more than {}={}: this "
      "replica may be cut off from it and its index stale",
      Since(now).count(), kFleetMaxSilenceMsVar, max_silence_.count());
}

}  // namespace kvindexer::replica
