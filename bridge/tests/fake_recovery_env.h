// Fakes of the recovery engine's environment: a manual clock whose waits
// advance simulated time (and let a simulation run at each step) and a live
// queue with the LiveBuffer's overflow behaviour. No real time passes.
//
// Thread safety: not thread-safe; everything runs on the test's thread.
#ifndef KVINDEXER_BRIDGE_TESTS_FAKE_RECOVERY_ENV_H_
#define KVINDEXER_BRIDGE_TESTS_FAKE_RECOVERY_ENV_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "bridge/recovery_environment.h"

namespace kvindexer::bridge::testing {

class FakeClock : public RecoveryClock {
 public:
  Clock::time_point Now() override { return now_; }
  bool WaitFor(std::chrono::milliseconds duration) override {
    Advance(duration);
    return Stopping();
  }
  bool Stopping() override { return now_ >= stop_at_; }

  // Moves time forward in steps of at most `tick_`, running `on_tick`
  // after each step.
  void Advance(std::chrono::milliseconds duration) {
    const Clock::time_point target = now_ + duration;
    while (now_ < target) {
      now_ = std::min(target, now_ + tick_);
      if (on_tick) on_tick(now_);
    }
    if (duration.count() == 0 && on_tick) on_tick(now_);
  }
  // Run() returns once `duration` more has passed.
  void StopAfter(std::chrono::milliseconds duration) {
    stop_at_ = now_ + duration;
  }
  std::chrono::milliseconds Elapsed() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
        now_.time_since_epoch());
  }

  std::function<void(Clock::time_point)> on_tick;

 private:
  Clock::time_point now_{};
  Clock::time_point stop_at_{};
  std::chrono::milliseconds tick_{10};
};

class FakeLiveQueue : public LiveQueue {
 public:
  explicit FakeLiveQueue(FakeClock* clock,
                         size_t capacity = std::numeric_limits<size_t>::max())
      : clock_(clock), capacity_(capacity) {}

  std::optional<LiveItem> Pop(std::chrono::milliseconds timeout) override {
    if (items_.empty()) clock_->Advance(timeout);
    if (items_.empty()) return std::nullopt;
    LiveItem item = std::move(items_.front());
    items_.pop_front();
    if (item.kind == LiveItem::Kind::kBatch) --batches_;
    if (overflow_open_ && items_.empty()) overflow_open_ = false;
    return item;
  }

  void PushBatch(uint64_t seq, std::string payload, std::string topic = "kv") {
    if (batches_ >= capacity_) {
      if (overflow_open_) {
        ++items_.back().dropped;
      } else {
        LiveItem overflow;
        overflow.kind = LiveItem::Kind::kOverflow;
        overflow.first_dropped_seq = seq;
        overflow.dropped = 1;
        items_.push_back(std::move(overflow));
        overflow_open_ = true;
      }
      return;
    }
    overflow_open_ = false;
    LiveItem item;
    item.batch = {seq, std::move(topic), std::move(payload)};
    items_.push_back(std::move(item));
    ++batches_;
  }
  void PushMarker(LiveItem::Kind kind, std::string detail = "") {
    overflow_open_ = false;
    LiveItem item;
    item.kind = kind;
    item.detail = std::move(detail);
    items_.push_back(std::move(item));
  }
  size_t size() const { return items_.size(); }

 private:
  FakeClock* clock_;
  const size_t capacity_;
  std::deque<LiveItem> items_;
  size_t batches_ = 0;
  bool overflow_open_ = false;
};

}  // namespace kvindexer::bridge::testing

#endif  // KVINDEXER_BRIDGE_TESTS_FAKE_RECOVERY_ENV_H_
