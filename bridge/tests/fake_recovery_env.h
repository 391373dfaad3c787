// Fakes of the recovery engine's environment: a manual clock whose waits
// advance simulated time (and let a simulation run at each step), a live
// queue with the LiveBuffer's overflow behaviour and a worker probe whose
// checks take simulated time. No real time passes.
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

#include "absl/status/status.h"
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

// A WorkerProbe whose checks end `latency` of simulated time after they
// start, succeeding while `reachable` is true at that moment.
class FakeWorkerProbe : public WorkerProbe {
 public:
  explicit FakeWorkerProbe(FakeClock* clock) : clock_(clock) {}

  void StartCheck() override {
    if (pending_since_) ++overlapping_starts;
    ++checks;
    pending_since_ = clock_->Now();
  }
  std::optional<absl::Status> TakeResult() override {
    if (!pending_since_ || clock_->Now() < *pending_since_ + latency) {
      return std::nullopt;
    }
    pending_since_.reset();
    if (reachable) return absl::OkStatus();
    return absl::UnavailableError("connection refused (fake)");
  }
  bool pending() const { return pending_since_.has_value(); }

  bool reachable = true;
  std::chrono::milliseconds latency{0};
  int checks = 0;
  int overlapping_starts = 0;  // StartCheck() while one was pending

 private:
  FakeClock* clock_;
  std::optional<RecoveryClock::Clock::time_point> pending_since_;
};

}  // namespace kvindexer::bridge::testing

#endif  // KVINDEXER_BRIDGE_TESTS_FAKE_RECOVERY_ENV_H_
